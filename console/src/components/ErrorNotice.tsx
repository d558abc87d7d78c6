import { ApiError, SilicoError } from '@silico/sdk';

/** An API failure as the envelope says it: message, code, the field it names, and the request id to quote. */
export function ErrorNotice({ error }: { error: unknown }) {
  if (!error) return null;
  if (error instanceof ApiError) {
    return (
      <div class="error" role="alert">
        <strong>{error.message}</strong>
        <div class="hint">
          <code>{error.code}</code>{error.param ? <> on <code>{error.param}</code></> : null} · HTTP {error.status}
          {error.requestId ? <> · request <code>{error.requestId}</code></> : null}
        </div>
      </div>
    );
  }
  const message = error instanceof SilicoError || error instanceof Error ? error.message : String(error);
  return <div class="error" role="alert"><strong>{message}</strong></div>;
}

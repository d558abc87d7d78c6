/**
 * One run, live: status, progress and log from its event stream (the SDK resumes a
 * dropped stream after the last event it saw), cancel while it is live, and its results
 * once it has completed.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { isTerminalStatus, type Run, type RunEvent } from '@silico/sdk';
import { useSession } from '../api.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';
import { RunResults } from '../components/RunResults.tsx';
import { usd, valueText, when } from '../format.ts';

/** Log lines kept on screen; the full log stays readable through the API. */
const LOG_LINES = 500;

export function RunPage({ id }: { id: string }) {
  const { client, refreshAccount } = useSession();
  const [run, setRun] = useState<Run | null>(null);
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [progress, setProgress] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [cancelling, setCancelling] = useState(false);
  const [reconnecting, setReconnecting] = useState(false);
  const seen = useRef(0);

  useEffect(() => {
    const stop = new AbortController();
    seen.current = 0;
    setEvents([]);
    setRun(null);
    const handle = client.runs.handle(id);
    const follow = async (): Promise<void> => {
      for await (const e of handle.events({ follow: true, after: seen.current, signal: stop.signal })) {
        if (e.seq <= seen.current) continue;
        seen.current = e.seq;
        setReconnecting(false);
        if (e.type === 'progress' && typeof e.data.fraction === 'number') setProgress(e.data.fraction);
        setEvents((list) => [...list.slice(-(LOG_LINES - 1)), e]);
        if (e.type === 'state_changed') {
          setRun(await client.runs.get(id, { signal: stop.signal }));
          if (typeof e.data.status === 'string' && isTerminalStatus(e.data.status)) refreshAccount();
        }
      }
    };
    (async () => {
      const first = await client.runs.get(id, { signal: stop.signal });
      setRun(first);
      setProgress(first.progress);
      if (isTerminalStatus(first.status)) {
        for await (const e of handle.events({ signal: stop.signal })) setEvents((list) => [...list.slice(-(LOG_LINES - 1)), e]);
        return;
      }
      // The SDK resumes a dropped stream by itself; when even its retries fail (the api is
      // unreachable for a while), the page keeps trying, from the last event it showed.
      for (let drops = 0; ; drops++) {
        try {
          await follow();
          break;
        } catch {
          if (stop.signal.aborted) return;
          setReconnecting(true);
          await new Promise((r) => setTimeout(r, client.runs.reconnectDelayMs(drops + 1)));
        }
      }
      setReconnecting(false);
      setRun(await client.runs.get(id, { signal: stop.signal }));
    })().catch((err: unknown) => { if (!stop.signal.aborted) setError(err); });
    return () => stop.abort();
  }, [id, client, refreshAccount]);

  const cancel = async () => {
    setCancelling(true);
    try {
      setRun(await client.runs.cancel(id));
    } catch (err) {
      setError(err);
    } finally {
      setCancelling(false);
    }
  };

  if (!run) return <main id="main"><h1>Run</h1>{error ? <ErrorNotice error={error} /> : <p>Loading…</p>}</main>;
  const live = !isTerminalStatus(run.status);
  const fraction = run.status === 'completed' ? 1 : progress ?? 0;
  return (
    <main id="main">
      <h1>Run of {run.resolved_ref}</h1>
      <p class="ref"><code>{run.id}</code></p>
      <div class="status-line">
        <span class={`status ${run.status}`} data-testid="run-status" role="status">{run.status.replace('_', ' ')}</span>
        <progress aria-label="Progress" max={1} value={fraction}>{Math.round(fraction * 100)}%</progress>
        <span>{Math.round(fraction * 100)}%</span>
        {reconnecting ? <span class="hint" role="status">Connection lost: reconnecting…</span> : null}
        {live ? <button type="button" class="danger" onClick={cancel} disabled={cancelling || run.status === 'cancelling'}>Cancel run</button> : null}
      </div>
      {run.error ? <div class="error" role="alert"><strong>{run.error.message}</strong> <code>{run.error.code}</code></div> : null}
      <ErrorNotice error={error} />
      <dl class="facts">
        <div><dt>Inputs</dt><dd><code>{JSON.stringify(run.inputs)}</code></dd></div>
        <div><dt>Compute</dt><dd>{run.compute_profile}, up to {run.max_runtime_seconds} s</dd></div>
        <div><dt>Reserved</dt><dd>{usd(run.credits_reserved)}</dd></div>
        <div><dt>Charged</dt><dd>{run.credits_settled === null ? 'when it ends' : usd(run.credits_settled)}</dd></div>
        <div><dt>Created</dt><dd>{when(run.created_at)}</dd></div>
        <div><dt>Finished</dt><dd>{when(run.finished_at)}</dd></div>
      </dl>
      <h2>Log</h2>
      <ol class="run-log" aria-live="polite" aria-label="Run log" tabIndex={0}>
        {events.map((e) => <li key={e.seq} data-seq={e.seq} class={`event event-${e.type}`}><time>{new Date(e.at).toLocaleTimeString()}</time> <span class="type">{e.type}</span> {e.message}{e.type === 'state_changed' && e.data.status ? ` → ${valueText(e.data.status)}` : ''}</li>)}
      </ol>
      {run.status === 'completed' ? <RunResults run={run} /> : null}
    </main>
  );
}

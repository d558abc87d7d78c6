import type { Middleware } from 'koa';
import { ApiError, errorBody, errors, knownApiError } from '../errors.ts';

/** Body-parser and HTTP errors carry a status; map them to our codes. */
function fromHttpError(err: { status?: number; statusCode?: number; type?: string; expose?: boolean; message?: string; limit?: number }): ApiError | undefined {
  const status = err.status ?? err.statusCode;
  if (!status || status >= 500) return undefined;
  if (status === 413) return errors.payloadTooLarge(err.limit ?? 0);
  if (status === 415) return errors.unsupportedMediaType('', 'application/json; charset=utf-8');
  if (status === 400) return errors.invalidRequest(`The request body is not valid JSON: ${err.message ?? 'parse error'}.`);
  return new ApiError(status, 'invalid_request', err.expose && err.message ? err.message : 'The request could not be processed.');
}

/**
 * The one place that decides what a failure looks like to a client: the spec's envelope
 * with our request id. Anything unexpected becomes a bare 500 (logged with its stack,
 * never sent).
 */
export function errorEnvelope(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (raw) {
      let err = knownApiError(raw) ?? fromHttpError(raw as object);
      if (!err) {
        ctx.state.log?.error({ err: raw }, 'unhandled error');
        err = errors.internal();
      } else if (err.status >= 500) {
        ctx.state.log?.error({ err: raw, code: err.code }, 'server error');
      }
      ctx.status = err.status;
      for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
      ctx.body = errorBody(err, ctx.state.requestId, Boolean(ctx.state.route?.gateway));
    }
  };
}

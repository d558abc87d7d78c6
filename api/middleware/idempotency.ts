import type { Middleware } from 'koa';
import type { Db } from '../../storage/db/knex.ts';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey } from '../../storage/db/idempotency.ts';
import { digestJson } from '../../storage/digest.ts';
import type { Config } from '../config.ts';
import { ApiError, errorBody, errors } from '../errors.ts';
import type { RouteDef } from '../routeTable.ts';

const MAX_KEY = 255;

/**
 * `Idempotency-Key` for the routes the spec names. The key is claimed before the work;
 * the same key with the same request replays the stored response, with another request
 * is 409 `idempotency_conflict`, and while the first is still running is 409
 * `idempotency_in_progress` with Retry-After. Client errors are stored and replayed like
 * successes; server errors free the key so the client can retry.
 */
export function idempotency(db: Db, route: RouteDef, limits: Config['limits']): Middleware {
  const routeId = `${route.method} ${route.path}`;
  return async (ctx, next) => {
    const key = ctx.get('Idempotency-Key');
    if (!key) {
      if (route.idempotency === 'required') {
        throw new ApiError(400, 'idempotency_key_required', `${routeId} requires an Idempotency-Key header: a unique key per logical request, reused only to retry it.`, 'Idempotency-Key');
      }
      return next();
    }
    if (key.length > MAX_KEY) throw errors.validation('parameter_invalid_length', `Idempotency-Key must be at most ${MAX_KEY} characters.`, 'Idempotency-Key');
    const accountId: string = ctx.state.caller.account.id;
    const requestSha256 = digestJson({ route: routeId, path: ctx.params ?? {}, query: ctx.query ?? {}, body: ctx.request.body ?? null });
    const claim = await claimIdempotencyKey(db, {
      accountId, key, route: routeId, requestSha256, ttlSeconds: limits.idempotencyTtlSeconds, lockSeconds: limits.idempotencyLockSeconds,
    });
    if (claim.kind === 'conflict') {
      throw errors.conflict('idempotency_conflict', 'This Idempotency-Key was used with a different request; use a new key for a new request.');
    }
    if (claim.kind === 'in_progress') {
      throw errors.conflict('idempotency_in_progress', 'A request with this Idempotency-Key is still being processed; retry after Retry-After.', { retry_after_seconds: claim.retryAfterSeconds }, { 'Retry-After': String(claim.retryAfterSeconds) });
    }
    if (claim.kind === 'replay') {
      ctx.status = claim.status;
      ctx.body = claim.body;
      ctx.set('Idempotent-Replayed', 'true');
      return;
    }
    try {
      await next();
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) {
        // Stored so a retry of the same request gets the same answer (request id included).
        await completeIdempotencyKey(db, accountId, key, err.status, errorBody(err, ctx.state.requestId, Boolean(route.gateway)));
      } else {
        await releaseIdempotencyKey(db, accountId, key);
      }
      throw err;
    }
    await completeIdempotencyKey(db, accountId, key, ctx.status, ctx.body);
  };
}

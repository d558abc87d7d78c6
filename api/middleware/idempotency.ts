import type { Middleware } from 'koa';
import type { Db } from '../../storage/db/knex.ts';
import { claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey } from '../../storage/db/idempotency.ts';
import { digestJson } from '../../storage/digest.ts';
import type { Config } from '../../kernel/config.ts';
import { ApiError, errorBody, errors } from '../errors.ts';
import { textProblem } from '../validation.ts';
import type { RouteDef } from '../routeTable.ts';

const MAX_KEY = 255;

/** One call of an idempotent route, as either door sees it. */
export interface IdempotentCall {
  accountId: string;
  key: string | undefined;
  requestId: string;
  /** How this door names the key in errors: the header over REST, an argument over MCP. */
  keyParam?: string;
  /** The request as REST would send it: path parameters, query strings and JSON body. */
  request: { path: Record<string, unknown>; query: Record<string, unknown>; body: unknown };
}

export interface Answer { status: number; body: unknown; replayed: boolean }

/**
 * `Idempotency-Key` for the routes the spec names, shared by REST and MCP. The key is
 * claimed before the work; the same key with the same request replays the stored
 * response, with another request is 409 `idempotency_conflict`, and while the first is
 * still running is 409 `idempotency_in_progress` with Retry-After. Client errors are
 * stored and replayed like successes; server errors free the key so the client can retry.
 */
export async function idempotent(
  db: Db, route: RouteDef, limits: Config['limits'], call: IdempotentCall,
  work: () => Promise<{ status: number; body: unknown }>,
): Promise<Answer> {
  const routeId = `${route.method} ${route.path}`;
  const { key, accountId } = call;
  const keyParam = call.keyParam ?? 'Idempotency-Key';
  if (!key) {
    if (route.idempotency === 'required') {
      throw new ApiError(400, 'idempotency_key_required', `${routeId} requires an Idempotency-Key: a unique key per logical request, reused only to retry it.`, keyParam);
    }
    return { ...(await work()), replayed: false };
  }
  // Counted in code points, as JSON Schema's maxLength (the MCP door's schema) counts.
  if ([...key].length > MAX_KEY) throw errors.validation('parameter_invalid_length', `${keyParam} must be at most ${MAX_KEY} characters.`, keyParam);
  // Over MCP the key is a JSON string and may hold what the keys table cannot store.
  const problem = textProblem(key);
  if (problem) throw errors.validation('parameter_invalid_format', `${keyParam} ${problem}.`, keyParam);
  const requestSha256 = digestJson({ route: routeId, path: call.request.path, query: call.request.query, body: call.request.body ?? null });
  const claim = await claimIdempotencyKey(db, {
    accountId, key, route: routeId, requestSha256, ttlSeconds: limits.idempotencyTtlSeconds, lockSeconds: limits.idempotencyLockSeconds,
  });
  if (claim.kind === 'conflict') {
    throw errors.conflict('idempotency_conflict', 'This Idempotency-Key was used with a different request; use a new key for a new request.');
  }
  if (claim.kind === 'in_progress') {
    throw errors.conflict('idempotency_in_progress', 'A request with this Idempotency-Key is still being processed; retry after Retry-After.', { retry_after_seconds: claim.retryAfterSeconds }, { 'Retry-After': String(claim.retryAfterSeconds) });
  }
  if (claim.kind === 'replay') return { status: claim.status, body: claim.body, replayed: true };
  let answer;
  try {
    answer = await work();
  } catch (err) {
    if (err instanceof ApiError && err.status < 500) {
      // Stored so a retry of the same request gets the same answer (request id included).
      await completeIdempotencyKey(db, accountId, key, err.status, errorBody(err, call.requestId, Boolean(route.gateway)));
    } else {
      await releaseIdempotencyKey(db, accountId, key);
    }
    throw err;
  }
  await completeIdempotencyKey(db, accountId, key, answer.status, answer.body);
  return { ...answer, replayed: false };
}

/** The REST door: the key comes from the `Idempotency-Key` header. */
export function idempotency(db: Db, route: RouteDef, limits: Config['limits']): Middleware {
  return async (ctx, next) => {
    const answer = await idempotent(db, route, limits, {
      accountId: ctx.state.caller.account.id,
      key: ctx.get('Idempotency-Key') || undefined,
      requestId: ctx.state.requestId,
      request: { path: ctx.params ?? {}, query: ctx.query ?? {}, body: ctx.request.body ?? null },
    }, async () => {
      await next();
      return { status: ctx.status, body: ctx.body };
    });
    if (answer.replayed) {
      ctx.status = answer.status;
      ctx.body = answer.body;
      ctx.set('Idempotent-Replayed', 'true');
    }
  };
}

import type { Middleware } from 'koa';
import type { KeyResolver } from '../../storage/db/keyCache.ts';
import { ApiError, errors } from '../errors.ts';
import { authorizeCall } from '../operation.ts';
import type { RouteDef } from '../routeTable.ts';
import type { ToolDef } from '../tools/tool.ts';

const BEARER = /^Bearer\s+(sk_[0-9A-Za-z]{20,60})\s*$/;

/**
 * Resolves `Authorization: Bearer <key>` to the caller. It does not reject yet: the rate
 * limiter must see the attempt first (by key, or by address for a bad key), so the 401
 * is raised by `requireCaller` after it.
 */
export function authenticate(keys: KeyResolver): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('Authorization');
    if (!header) {
      ctx.state.authError = errors.unauthenticated('api_key_missing', 'No API key: send `Authorization: Bearer <API_KEY>`.');
    } else {
      const m = BEARER.exec(header);
      const found = m ? await keys.resolve(m[1]!) : undefined;
      if (!found) {
        ctx.state.authError = errors.unauthenticated('api_key_invalid', 'The API key is malformed or unknown.');
      } else if (found.key.revoked_at) {
        ctx.state.authError = errors.unauthenticated('api_key_revoked', 'The API key has been revoked.');
      } else if (found.key.expires_at && new Date(found.key.expires_at).getTime() <= Date.now()) {
        ctx.state.authError = errors.unauthenticated('api_key_expired', 'The API key has expired.');
      } else {
        ctx.state.caller = found;
      }
    }
    await next();
  };
}

/** Raises the pending 401, if any. */
export function requireCaller(): Middleware {
  return async (ctx, next) => {
    if (ctx.state.authError) throw ctx.state.authError as ApiError;
    await next();
  };
}

/** The shared scope and gateway check, as route middleware. */
export function authorize(route: RouteDef, tool: ToolDef): Middleware {
  return async (ctx, next) => {
    authorizeCall(ctx.state.caller, route, tool);
    await next();
  };
}

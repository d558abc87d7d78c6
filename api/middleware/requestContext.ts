import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Histogram } from 'prom-client';

/**
 * Gives every request our own id (UUID v4) in `X-Request-ID` and `Request-Id`, a child
 * logger carrying it, and one access-log line and one metric sample when it ends. A
 * client-sent request id is never trusted as ours; it is logged as client_request_id.
 */
const PROBES = new Set(['/healthz', '/readyz']);

export function requestContext(log: Logger, duration: Histogram<'method' | 'route' | 'status'>): Middleware {
  return async (ctx, next) => {
    const requestId = randomUUID();
    const started = process.hrtime.bigint();
    ctx.state.requestId = requestId;
    const clientRequestId = ctx.get('X-Request-ID') || undefined;
    ctx.state.log = log.child({ request_id: requestId, ...(clientRequestId ? { client_request_id: clientRequestId.slice(0, 200) } : {}) });
    ctx.set('X-Request-ID', requestId);
    ctx.set('Request-Id', requestId);
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (ctx.state.routeId as string | undefined) ?? 'unmatched';
      duration.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      // Probes (a balancer checks each replica twice a second) log at debug, unless they fail.
      const probe = PROBES.has(ctx.path) && ctx.status < 400;
      ctx.state.log[probe ? 'debug' : 'info']({ method: ctx.method, path: ctx.path, route, status: ctx.status, ms: Math.round(seconds * 1000), account: ctx.state.caller?.account.id }, 'request');
    }
  };
}

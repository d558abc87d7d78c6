import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Histogram } from 'prom-client';

/**
 * Gives every request our own id (UUID v4) in `X-Request-ID` and `Request-Id`, a child
 * logger carrying it, and one access-log line and one metric sample when it ends. A
 * client-sent request id is never trusted as ours; it is logged as client_request_id.
 * The child logger is made when something logs (most requests log only their access
 * line, and only at `info`), and each route's metric series is looked up once.
 */
const PROBES = new Set(['/healthz', '/readyz']);

/**
 * A request's `ctx.state`: its id, and its child logger made on first use. A class, so
 * every request's state has the same shape (a getter defined per request would give each
 * its own).
 */
class RequestState {
  #child: Logger | undefined;
  private readonly root: Logger;
  readonly requestId: string;
  private readonly clientRequestId: string | undefined;
  constructor(root: Logger, requestId: string, clientRequestId: string | undefined) {
    this.root = root;
    this.requestId = requestId;
    this.clientRequestId = clientRequestId;
  }

  get log(): Logger {
    return (this.#child ??= this.root.child({ request_id: this.requestId, ...(this.clientRequestId ? { client_request_id: this.clientRequestId.slice(0, 200) } : {}) }));
  }
}

export function requestContext(log: Logger, duration: Histogram<'method' | 'route' | 'status'>): Middleware {
  const series = new Map<string, Histogram.Internal<'method' | 'route' | 'status'>>();
  const observe = (method: string, route: string, status: string, seconds: number) => {
    const key = `${method} ${route} ${status}`;
    let s = series.get(key);
    if (!s) series.set(key, (s = duration.labels({ method, route, status })));
    s.observe(seconds);
  };
  return async (ctx, next) => {
    const requestId = randomUUID();
    const started = process.hrtime.bigint();
    ctx.state = new RequestState(log, requestId, ctx.get('X-Request-ID') || undefined);
    ctx.set('X-Request-ID', requestId);
    ctx.set('Request-Id', requestId);
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (ctx.state.routeId as string | undefined) ?? 'unmatched';
      observe(ctx.method, route, String(ctx.status), seconds);
      // Probes (a balancer checks each replica twice a second) log at debug, unless they fail.
      const level = PROBES.has(ctx.path) && ctx.status < 400 ? 'debug' : 'info';
      if (log.isLevelEnabled(level)) {
        ctx.state.log[level]({ method: ctx.method, path: ctx.path, route, status: ctx.status, ms: Math.round(seconds * 1000), account: ctx.state.caller?.account.id }, 'request');
      }
    }
  };
}

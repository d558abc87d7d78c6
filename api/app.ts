import Koa from 'koa';
import compose from 'koa-compose';
import pino, { type Logger } from 'pino';
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Deps } from './tools/tool.ts';
import { requestContext } from './middleware/requestContext.ts';
import { errorEnvelope } from './middleware/errors.ts';
import { authenticate } from './middleware/auth.ts';
import { rateLimit } from './middleware/rateLimit.ts';
import { createScopeCounters } from '../storage/db/rateCounting.ts';
import { buildRouter, dispatchRoute, matchRoute, type RouteTable } from './router.ts';
import { OPENAPI_PATH, ROUTES } from './routeTable.ts';
import { TOOLS } from './tools/index.ts';
import { buildOpsRouter } from './ops.ts';
import { errors } from './errors.ts';
import { mcpEndpoint } from './mcp/endpoint.ts';
import { consolePages } from './console.ts';
import { docsPages } from './docs.ts';

const isVersioned = (path: string) => path === '/v1' || path.startsWith('/v1/');
/** The OpenAPI document's path as its router matches it: any case, with or without a trailing slash. */
const isOpenApi = (path: string) => path.toLowerCase().replace(/\/$/, '') === OPENAPI_PATH;

export interface App {
  koa: Koa;
  registry: Registry;
  log: Logger;
  /** Leaves the balancer's rotation: /readyz answers 503 `draining` from now on; requests are still served. */
  drain(): void;
  /** Writes what its rate limiter counted alone and leaves the counting (after the last request). */
  close(): Promise<void>;
}

/** The rate-limit counting every api process shares (storage/db/rateCounting.ts). */
const REQUEST_COUNTING = 'requests';

/**
 * Assembles the API without listening, so tests and benchmarks can drive
 * `app.koa.callback()` as well as a real port. Order: request id and logs, the error
 * envelope, operational routes, the console's page and assets (/console), the MCP endpoint (/mcp, with its own auth and limits), then for /v1: authentication, rate limits, the routes
 * of the table, and 404/405 for anything else.
 */
export function createApp(deps: Deps, opts: { log?: Logger; table?: RouteTable; version?: string } = {}): App {
  const log = opts.log ?? pino({ level: deps.config.logLevel, base: { process: 'api' } });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'silico_http_request_duration_seconds',
    help: 'API request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  // X-Forwarded-For names the client only behind proxies we were told of: otherwise any
  // caller could choose the address its unauthenticated rate limit is counted under.
  const hops = deps.config.trustedProxyHops;
  const koa = new Koa({ proxy: hops > 0, maxIpsCount: hops });
  const table = opts.table ?? { routes: ROUTES, tools: TOOLS };
  const api = buildRouter(deps, table);
  const lifecycle = { draining: false };
  // One set of counters for the process: /v1 and /mcp draw from the same. Every api process
  // counts the same scope, so a process serving alone counts in its memory.
  const counters = createScopeCounters(deps.pool, { scope: REQUEST_COUNTING });
  const ops = buildOpsRouter(deps, registry, log, lifecycle);

  koa.use(requestContext(log, duration));
  koa.use(errorEnvelope());
  // The pages and the operational routes, each of which passes what is not its own on;
  // the /v1 routes (but the OpenAPI document) skip them all.
  const site = compose<Koa.ParameterizedContext>([ops.routes() as Koa.Middleware, consolePages(), docsPages(), mcpEndpoint(deps, table, opts.version ?? '0.1.0', counters)]);
  koa.use((ctx, next) => (isVersioned(ctx.path) && !isOpenApi(ctx.path) ? next() : site(ctx, next)));
  koa.use(async (ctx, next) => {
    if (!isVersioned(ctx.path)) throw errors.routeNotFound(ctx.method, ctx.path);
    const m = matchRoute(api, table.routes, ctx.path, ctx.method);
    ctx.state.route = m.route;
    ctx.state.routeLayer = m.layer;
    ctx.state.routeId = m.route ? `${m.route.method} ${m.route.path}` : undefined;
    ctx.state.allowed = m.allowed;
    ctx.state.pathMatched = m.pathMatched;
    await next();
  });
  koa.use(authenticate(deps.keys));
  // Reads change nothing, so each is counted while it runs (see rateLimit).
  koa.use(rateLimit(counters, deps.config.limits, (ctx) => (ctx.state.route?.bucket === 'runs' ? 'runs' : 'reads'), undefined,
    (ctx) => (ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.state.route?.bucket !== 'runs'));
  koa.use(dispatchRoute());
  koa.use(async (ctx) => {
    if (ctx.state.pathMatched) throw errors.methodNotAllowed(ctx.method, ctx.state.allowed);
    throw errors.routeNotFound(ctx.method, ctx.path);
  });
  return { koa, registry, log, drain: () => { lifecycle.draining = true; }, close: () => counters.close() };
}

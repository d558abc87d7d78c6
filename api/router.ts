import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Context, Middleware } from 'koa';
import compose from 'koa-compose';
import { ROUTES, type RouteDef } from './routeTable.ts';
import { TOOLS } from './tools/index.ts';
import { jsonBodySchema, type Deps, type ToolDef } from './tools/tool.ts';
import { authorize, requireCaller } from './middleware/auth.ts';
import { renderBody, runOperation } from './operation.ts';
import { errors } from './errors.ts';
import { idempotency } from './middleware/idempotency.ts';
import { check, compileInput } from './validation.ts';
import { preferredWaitSeconds } from './preferWait.ts';

export interface RouteTable { routes: readonly RouteDef[]; tools: ReadonlyMap<string, ToolDef> }

/** Parameters whose values hold a `/`: a release reference is `<namespace>/<name>@<version>`. */
const MULTI_SEGMENT = new Set(['reference']);

/**
 * `/runs/{run_id}` → `/runs/:run_id` (koa-router syntax); a reference may come with its
 * `/` raw or encoded as %2F, so it takes the rest of the path.
 */
export function koaPath(path: string): string {
  return `/v1${path.replace(/\{(\w+)\}/g, (_, name: string) => (MULTI_SEGMENT.has(name) ? `*${name}` : `:${name}`))}`;
}

function hasBody(ctx: Context): boolean {
  return Number(ctx.get('Content-Length') || 0) > 0 || Boolean(ctx.get('Transfer-Encoding'));
}

/** JSON bodies only; a body of any other type is a 415, a malformed one a 400. */
export function jsonBody(limitBytes: number): Middleware {
  const parse = bodyParser({ enableTypes: ['json'], jsonLimit: limitBytes, jsonStrict: true, encoding: 'utf-8' });
  return async (ctx, next) => {
    if (hasBody(ctx) && !ctx.is('application/json', '+json')) {
      throw errors.unsupportedMediaType(ctx.get('Content-Type'), 'application/json');
    }
    try {
      await parse(ctx as never, async () => undefined);
    } catch (err) {
      // A body that claims a Content-Encoding it does not have fails in zlib, with no HTTP status.
      const e = err as { status?: number; statusCode?: number; message?: string };
      if ((e.status ?? e.statusCode) === undefined && ctx.get('Content-Encoding')) {
        throw errors.invalidRequest(`The request body could not be decoded as ${ctx.get('Content-Encoding')}: ${e.message ?? 'decoding failed'}.`);
      }
      throw err;
    }
    await next();
  };
}

/** Validates path, query and body against the operation's schemas; the merged input goes on ctx.state. */
function validateInput(tool: ToolDef): Middleware {
  const compiled = compileInput(tool);
  return async (ctx, next) => {
    const params = { ...(ctx.params as Record<string, string>) };
    const query: Record<string, unknown> = { ...ctx.query };
    const body = jsonBodySchema(tool) ? (ctx.request.body ?? {}) : {};
    check(compiled.path, params);
    check(compiled.query, query);
    check(compiled.body, body);
    ctx.state.input = Object.assign({}, body, query, params);
    await next();
  };
}

/** Runs the operation (or answers 501 while it is not built) and renders its envelope. */
function execute(route: RouteDef, tool: ToolDef, deps: Deps): Middleware {
  return async (ctx) => {
    const wait = route.preferWait ? preferredWaitSeconds(ctx.get('Prefer') || undefined) : undefined;
    const result = await runOperation(tool, ctx.state.input, {
      deps, caller: ctx.state.caller, requestId: ctx.state.requestId, idempotencyKey: route.idempotency ? ctx.get('Idempotency-Key') || undefined : undefined,
      requestsToday: ctx.state.requestsToday, ...(wait === undefined ? {} : { waitMs: wait * 1000 }),
      http: { accept: ctx.get('Accept'), lastEventId: ctx.get('Last-Event-ID') || undefined, range: ctx.get('Range') || undefined, request: ctx.req },
    });
    ctx.status = route.success;
    if (wait !== undefined) ctx.set('Preference-Applied', `wait=${wait}`);
    if (result.raw) {
      if (result.raw.status) ctx.status = result.raw.status;
      for (const [k, v] of Object.entries(result.raw.headers ?? {})) ctx.set(k, v);
      ctx.type = result.raw.contentType;
      ctx.body = result.raw.body;
      return;
    }
    ctx.body = renderBody(route, result, ctx.state.requestId);
  };
}

/**
 * The /v1 routes, one router for each first path segment (`runs`, `files`, ...): every
 * route's first segment is a literal, so a request is matched against the few routes of
 * its own segment rather than all of them.
 */
export interface RouteIndex { bySegment: ReadonlyMap<string, Router> }

/** `/v1/runs/...` → `runs`, lower-cased as the routers match (case-insensitively). */
function firstSegment(path: string): string {
  const rest = path.startsWith('/v1/') ? path.slice(4) : path.replace(/^\/+/, '');
  const end = rest.indexOf('/');
  return (end < 0 ? rest : rest.slice(0, end)).toLowerCase();
}

/** Builds the /v1 routers from the route table (another table and tool set may be given). */
export function buildRouter(deps: Deps, table: RouteTable = { routes: ROUTES, tools: TOOLS }): RouteIndex {
  const bySegment = new Map<string, Router>();
  for (const route of table.routes) {
    const tool = table.tools.get(route.tool);
    if (!tool) throw new Error(`route ${route.method} ${route.path} names unknown tool ${route.tool}`);
    // A signed route is the payment provider's: no key, and the operation reads the raw body.
    const chain: Middleware[] = route.signed ? [] : [requireCaller(), authorize(route, tool)];
    if (jsonBodySchema(tool)) chain.push(jsonBody(deps.config.limits.bodyBytes));
    chain.push(validateInput(tool));
    if (route.idempotency) chain.push(idempotency(deps.db, route, deps.config.limits));
    chain.push(execute(route, tool, deps));
    const segment = firstSegment(route.path);
    if (segment.startsWith('{')) throw new Error(`route ${route.method} ${route.path} begins with a parameter: routes are indexed by their first segment`);
    let router = bySegment.get(segment);
    if (!router) bySegment.set(segment, (router = new Router()));
    // Composed once here: `dispatchRoute` runs it as the route's one middleware.
    router.register(koaPath(route.path), [route.method], [compose(chain)] as never, { name: route.tool });
  }
  return { bySegment };
}

/** What a request's path and method reach: the route (if any), and what the path allows. */
export interface RouteMatch {
  route?: RouteDef;
  /** The router's layer of that route, which `dispatchRoute` runs. */
  layer?: Layer;
  pathMatched: boolean;
  allowed: string[];
}

type Layer = Router['stack'][number];

/** The route definition a request would reach, if any (for rate buckets, logs and dispatch). */
export function matchRoute(index: RouteIndex, routes: readonly RouteDef[], path: string, method: string): RouteMatch {
  const router = index.bySegment.get(firstSegment(path));
  if (!router) return { pathMatched: false, allowed: [] };
  const m = router.match(path, method);
  const layer = m.pathAndMethod.find((l) => l.methods.length > 0);
  const allowed = [...new Set(m.path.flatMap((l) => l.methods))];
  const route = layer ? routeByTool(routes).get(layer.name!) : undefined;
  return { route, layer, pathMatched: m.path.some((l) => l.methods.length > 0), allowed };
}

const byTool = new WeakMap<readonly RouteDef[], Map<string, RouteDef>>();
function routeByTool(routes: readonly RouteDef[]): Map<string, RouteDef> {
  let m = byTool.get(routes);
  if (!m) byTool.set(routes, (m = new Map(routes.map((r) => [r.tool, r]))));
  return m;
}

/**
 * Runs the route `matchRoute` found (`ctx.state.routeLayer`), with its path parameters
 * decoded as the router decodes them: the request is matched once, where the router's
 * own middleware would match it again and compose its chain anew on every request.
 */
export function dispatchRoute(): Middleware {
  return (ctx, next) => {
    const layer = ctx.state.routeLayer as Layer | undefined;
    if (!layer) return next();
    ctx.params = layer.params(ctx.path, layer.captures(ctx.path), {});
    return (layer.stack[0] as Middleware)(ctx, next);
  };
}

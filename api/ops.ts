import Router from '@koa/router';
import type Koa from 'koa';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Deps } from './tools/tool.ts';
import { buildOpenApi } from './openapi.ts';
import { OPENAPI_PATH } from './routeTable.ts';
import { pingDb } from '../storage/db/knex.ts';

type Check = 'ok' | 'unavailable' | 'timed_out';

/**
 * Checks one dependency with a time bound. The answer names the state only: the raw error
 * (addresses, driver messages) goes to the log, not to whoever can reach /readyz.
 */
async function probe(name: string, fn: () => Promise<unknown>, log: Logger, ms = 2000): Promise<Check> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = Symbol('timeout');
  try {
    const r = await Promise.race([fn(), new Promise((resolve) => (timer = setTimeout(() => resolve(timeout), ms)))]);
    if (r === timeout) {
      log.warn({ dependency: name, ms }, 'readiness check timed out');
      return 'timed_out';
    }
    return 'ok';
  } catch (err) {
    log.warn({ dependency: name, err }, 'readiness check failed');
    return 'unavailable';
  } finally {
    clearTimeout(timer);
  }
}

/** Prometheus metrics of this process. */
export function metricsHandler(registry: Registry) {
  return async (ctx: Koa.Context) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  };
}

/**
 * Operational routes outside the versioned API: liveness, readiness (names the failing
 * dependency), Prometheus metrics and the OpenAPI document (docs.ts draws it at /docs).
 */
export function buildOpsRouter(deps: Deps, registry: Registry, log: Logger, lifecycle: { draining: boolean } = { draining: false }): Router {
  const router = new Router();
  const openapi = buildOpenApi(deps.config.baseUrl);
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok', request_id: ctx.state.requestId };
  });
  router.get('/readyz', async (ctx) => {
    if (lifecycle.draining) {
      // Stopping: out of the balancer's rotation first, then the requests in flight finish.
      ctx.status = 503;
      ctx.set('Retry-After', '1');
      ctx.body = { status: 'draining', failing: [], checks: {}, request_id: ctx.state.requestId };
      return;
    }
    const [postgres, temporal, objectStore] = await Promise.all([
      probe('postgres', () => pingDb(deps.db), log),
      probe('temporal', () => deps.temporal.ping(), log),
      probe('object_store', () => deps.objects.ping(), log),
    ]);
    const checks = { postgres, temporal, object_store: objectStore };
    const failing = Object.entries(checks).filter(([, v]) => v !== 'ok').map(([k]) => k);
    // Out of rotation only when this replica can serve nothing: every request is
    // authenticated against Postgres. Temporal or the object store down is shared by every
    // replica; taking them all out would refuse the reads and writes that need neither,
    // so the replica stays in, `degraded`, and each request that needs the missing one
    // answers 503 naming it.
    const serving = postgres === 'ok';
    ctx.status = serving ? 200 : 503;
    if (!serving) ctx.set('Retry-After', '5');
    ctx.body = { status: !serving ? 'unavailable' : failing.length ? 'degraded' : 'ready', failing, checks, request_id: ctx.state.requestId };
  });
  // With an ops port configured, metrics are served there alone (metricsServer.ts).
  if (deps.config.metricsPort === null) router.get('/metrics', metricsHandler(registry));
  router.get(OPENAPI_PATH, (ctx) => {
    ctx.body = openapi;
  });
  return router;
}

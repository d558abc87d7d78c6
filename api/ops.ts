import Router from '@koa/router';
import type { Registry } from 'prom-client';
import type { Deps } from './tools/tool.ts';
import { buildOpenApi } from './openapi.ts';
import { renderDocs } from './docs.ts';

/** Checks one dependency with a time bound; resolves to an error message or null. */
async function probe(fn: () => Promise<unknown>, ms = 2000): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([fn(), new Promise((_, rej) => (timer = setTimeout(() => rej(new Error(`no answer within ${ms} ms`)), ms)))]);
    return null;
  } catch (err) {
    return (err as Error).message || String(err);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Operational routes outside the versioned API: liveness, readiness (names the failing
 * dependency), Prometheus metrics, the OpenAPI document and the docs page.
 */
export function buildOpsRouter(deps: Deps, registry: Registry): Router {
  const router = new Router();
  const openapi = buildOpenApi(deps.config.baseUrl);
  const docs = renderDocs(openapi);
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok', request_id: ctx.state.requestId };
  });
  router.get('/readyz', async (ctx) => {
    const [postgres, temporal, objectStore] = await Promise.all([
      probe(() => deps.db.raw('select 1')),
      probe(() => deps.temporal.ping()),
      probe(() => deps.objects.ping()),
    ]);
    const checks = { postgres: postgres ?? 'ok', temporal: temporal ?? 'ok', object_store: objectStore ?? 'ok' };
    const failing = Object.entries(checks).filter(([, v]) => v !== 'ok').map(([k]) => k);
    ctx.status = failing.length ? 503 : 200;
    if (failing.length) ctx.set('Retry-After', '5');
    ctx.body = { status: failing.length ? 'unavailable' : 'ready', failing, checks, request_id: ctx.state.requestId };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  router.get('/v1/openapi.json', (ctx) => {
    ctx.body = openapi;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = docs;
  });
  return router;
}

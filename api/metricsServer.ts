import Koa from 'koa';
import type { Registry } from 'prom-client';
import { metricsHandler } from './ops.ts';

/** The ops port's app: `/metrics` and nothing else, for a scraper inside the deployment. */
export function metricsApp(registry: Registry): Koa {
  const koa = new Koa();
  koa.use(async (ctx) => {
    if (ctx.method === 'GET' && ctx.path === '/metrics') return metricsHandler(registry)(ctx);
    ctx.status = 404;
  });
  return koa;
}

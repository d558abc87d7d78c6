import type { Server } from 'node:http';
import Koa from 'koa';
import type { State } from '@temporalio/worker';
import type { Registry } from 'prom-client';

/** What the health port needs of a Temporal worker. */
export interface WorkerState { getState(): State }

/** States from which a worker never polls again: the process must be replaced. */
const DEAD: ReadonlySet<State> = new Set<State>(['FAILED', 'STOPPED']);

/**
 * The worker process's probes, on a port of its own: `/healthz` answers 200 while none of
 * its Temporal workers has failed or stopped (a liveness probe restarts the pod otherwise);
 * `/readyz` answers 200 only while every one of them polls its task queue, so a rollout
 * replaces a worker only once its successor takes work, and 503 while it drains. With a
 * `registry`, `/metrics` serves it to Prometheus (what the worker's housekeeping counts).
 */
export function workerHealthApp(workers: WorkerState[], registry?: Registry): Koa {
  const koa = new Koa();
  koa.use(async (ctx) => {
    if (registry && ctx.method === 'GET' && ctx.path === '/metrics') {
      ctx.type = registry.contentType;
      ctx.body = await registry.metrics();
      return;
    }
    if (ctx.method !== 'GET' || (ctx.path !== '/healthz' && ctx.path !== '/readyz')) {
      ctx.status = 404;
      return;
    }
    const states = workers.map((w) => w.getState());
    const ok = ctx.path === '/healthz' ? !states.some((s) => DEAD.has(s)) : states.every((s) => s === 'RUNNING');
    ctx.status = ok ? 200 : 503;
    ctx.body = { status: ok ? (ctx.path === '/healthz' ? 'ok' : 'ready') : 'unavailable', workers: states };
  });
  return koa;
}

/** Serves the probes (and metrics) on `port` (all interfaces: the kubelet probes the pod's address). */
export function startWorkerHealth(port: number, workers: WorkerState[], registry?: Registry): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = workerHealthApp(workers, registry).listen(port);
    server.once('listening', () => {
      // Past listening, a failure to accept a probe's connection is the probe's, not the worker's end.
      server.on('error', () => undefined);
      resolve(server);
    });
    server.once('error', reject);
  });
}

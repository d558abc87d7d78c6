import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { State } from '@temporalio/worker';
import { startWorkerHealth } from '../../deploy/workerHealth.ts';

// The worker's probes map its Temporal workers' states: live unless one failed or stopped,
// ready only while every one polls. (The cluster suite probes real workers.)

async function probe(states: State[]): Promise<{ healthz: number; readyz: number; other: number; body: unknown }> {
  const workers = states.map((s) => ({ getState: () => s }));
  const server = await startWorkerHealth(0, workers);
  try {
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const healthz = (await fetch(`${base}/healthz`)).status;
    const ready = await fetch(`${base}/readyz`);
    const other = (await fetch(`${base}/metrics`)).status;
    return { healthz, readyz: ready.status, other, body: await ready.json() };
  } finally {
    server.close();
  }
}

test('every worker polling: live and ready, each state named', async () => {
  const r = await probe(['RUNNING', 'RUNNING']);
  assert.deepEqual(r, { healthz: 200, readyz: 200, other: 404, body: { status: 'ready', workers: ['RUNNING', 'RUNNING'] } });
});

test('starting or draining: live, not ready', async () => {
  for (const s of ['INITIALIZED', 'DRAINING', 'STOPPING'] as State[]) {
    const r = await probe(['RUNNING', s]);
    assert.equal(r.healthz, 200, s);
    assert.equal(r.readyz, 503, s);
  }
});

test('one worker failed or stopped: neither live nor ready', async () => {
  for (const s of ['FAILED', 'STOPPED'] as State[]) {
    const r = await probe(['RUNNING', s]);
    assert.equal(r.healthz, 503, s);
    assert.equal(r.readyz, 503, s);
  }
});

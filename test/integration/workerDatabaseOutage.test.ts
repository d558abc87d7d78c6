import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { call, closeTestDb, driverPid, newAccount, ownDatabase, publishFixtureLab, spawnApi, spawnWorker, testProfileRow, waitForRun } from '../helpers.ts';
import { createTcpFaultProxy, type TcpFaultProxy } from '../tcpFaultProxy.ts';
import { startTemporal } from '../../deploy/local/temporal.ts';
import { Supervisor } from '../../deploy/local/processes.ts';

// A worker whose Postgres goes away while a run writes its progress and events: the
// worker stays up (a write that fails is the run's failure, never an unhandled rejection
// that ends the process and every run in it), and the run ends truthfully once Postgres
// is back. On a Temporal server, database, api and worker of this file's own, with the
// worker reaching Postgres through a proxy this test cuts, so no other file's work is touched.

const PROFILE = 'test-db-outage';

const sup = new Supervisor(() => undefined);
let dataDir: string | undefined;
let proxy: TcpFaultProxy | undefined;
let own: Awaited<ReturnType<typeof ownDatabase>> | undefined;
const stops: Array<() => Promise<void>> = [];
after(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await sup.stopAll(3000);
  await proxy?.close();
  await own?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  await closeTestDb();
});

test('Postgres down for 4 s under a run that writes progress every second: the worker stays up and the run completes', { timeout: 180_000 }, async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'silico-db-outage-'));
  const temporal = await startTemporal(sup, { bin: process.env.SILICO_TEST_TEMPORAL_BIN!, dataDir, port: await getPort(), uiPort: null, namespace: 'default', fast: true });
  own = await ownDatabase();
  await own.db('compute_profiles').insert(testProfileRow({ id: PROFILE, title: 'Test profile whose worker loses Postgres', schedule_to_start_seconds: 120 }));
  const pg = new URL(own.url);
  proxy = await createTcpFaultProxy({ host: pg.hostname, port: Number(pg.port) });
  const proxied = new URL(pg);
  proxied.hostname = '127.0.0.1';
  proxied.port = String(proxy.port);
  const api = await spawnApi({ TEMPORAL_ADDRESS: temporal.address, DATABASE_URL: own.url });
  stops.push(api.stop);
  const worker = await spawnWorker({ TEMPORAL_ADDRESS: temporal.address, DATABASE_URL: proxied.toString(), SILICO_COMPUTE_PROFILES: PROFILE });
  stops.push(worker.stop);
  let exited: string | undefined;
  worker.proc.once('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));

  const owner = await newAccount({ usd: 20, db: own.db });
  const slow = await publishFixtureLab(owner, 'slow-lab', own.db);
  const started = await call('POST', '/runs', {
    key: owner.key, base: api.base, headers: { 'Idempotency-Key': crypto.randomUUID() },
    body: { ref: slow, inputs: { seconds_per_window: 0.2, busy_seconds: 8 }, max_runtime_seconds: 120, compute_profile: PROFILE },
  });
  assert.equal(started.status, 200, started.text);
  const runId = started.body.id as string;
  await driverPid(owner.key, runId, 60_000, api.base);

  // The lab reports progress about once a second; the worker's writes of it (and of its
  // events) fail while Postgres cannot be reached.
  await new Promise((r) => setTimeout(r, 1500));
  proxy.setMode('down');
  await new Promise((r) => setTimeout(r, 4000));
  proxy.setMode('pass');
  assert.equal(exited, undefined, 'the worker lived through the outage');

  const run = await waitForRun(owner.key, runId, 90_000, undefined, api.base);
  assert.equal(exited, undefined, 'the worker lived through the outage and the run after it');
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  assert.equal(run.progress, 1);
});

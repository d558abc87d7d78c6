import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { Client, Connection } from '@temporalio/client';
import { call, closeTestDb, errorOf, newAccount, ownDatabase, spawnApi, spawnWorker } from '../helpers.ts';
import { startTemporal } from '../../deploy/local/temporal.ts';
import { Supervisor } from '../../deploy/local/processes.ts';
import { sessionWorkflowId } from '../../kernel/workflowNames.ts';

// A session on its own Temporal server (a persistent SQLite file), database, api and
// worker, so the worker can be killed and the server restarted on its database mid-session.

const sup = new Supervisor(() => undefined);
let dataDir: string;
let own: Awaited<ReturnType<typeof ownDatabase>> | undefined;
const stops: Array<() => Promise<void>> = [];
after(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await sup.stopAll(3000);
  await own?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  await closeTestDb();
});

function temporalOn(port: number) {
  return startTemporal(sup, { bin: process.env.SILICO_TEST_TEMPORAL_BIN!, dataDir, port, uiPort: null, namespace: 'default', fast: false });
}

test('kill -9 of the worker and a restart of the Temporal server on its database mid-session lose nothing; the session resumes', { timeout: 300_000 }, async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'silico-session-restart-'));
  const port = await getPort();
  let temporal = await temporalOn(port);
  own = await ownDatabase();
  const env = { TEMPORAL_ADDRESS: temporal.address, DATABASE_URL: own.url };
  const api = await spawnApi(env);
  stops.push(api.stop);
  let worker = await spawnWorker(env);
  stops.push(() => worker.stop());
  const { key } = await newAccount({ db: own.db });
  const post = (p: string, body: unknown, headers: Record<string, string> = {}) => call('POST', p, { key, body, headers, base: api.base });

  const s = (await post('/sessions', { title: 'Survives restarts' })).body;
  assert.ok(s.session_id, JSON.stringify(s));
  assert.equal((await post(`/sessions/${s.session_id}/external-sessions`, { provider: 'chat', external_id: 'c1' })).status, 200);
  for (const [kind, body] of [['contract-plans', { requirements: [{ id: 'R', text: 'A note', evidence_kind: 'note' }] }], ['execution-plans', { steps: [{ id: 'a', title: 'A' }, { id: 'b', title: 'B', depends_on: ['a'] }] }]] as const) {
    const plan = (await post(`/sessions/${s.session_id}/${kind}`, body)).body;
    assert.equal((await post('/session-changes', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 })).status, 200);
  }
  assert.equal((await post(`/sessions/${s.session_id}/progress`, { step_id: 'a', status: 'started' })).status, 200);

  // The worker dies: a progress post cannot be applied now, and says so.
  worker.proc.kill('SIGKILL');
  await new Promise((r) => worker.proc.once('exit', r));
  const idem = { 'Idempotency-Key': crypto.randomUUID() };
  const during = await post(`/sessions/${s.session_id}/progress`, { step_id: 'a', status: 'done', note: 'while down' }, idem);
  assert.equal(during.status, 503, during.text);
  assert.equal(errorOf(during).details.dependency, 'temporal');

  // The server restarts on its database.
  temporal.proc.child.kill('SIGTERM');
  await temporal.proc.exited;
  temporal = await temporalOn(port);
  worker = await spawnWorker(env);

  // The same post again completes it once; the session goes on where it was.
  const retried = await post(`/sessions/${s.session_id}/progress`, { step_id: 'a', status: 'done', note: 'while down' }, idem);
  assert.equal(retried.status, 200, retried.text);
  const again = await post(`/sessions/${s.session_id}/progress`, { step_id: 'a', status: 'done', note: 'while down' }, idem);
  assert.equal(again.body.seq, retried.body.seq, 'the same key is the same entry');
  assert.equal((await post(`/sessions/${s.session_id}/progress`, { step_id: 'b', status: 'started' })).body.seq, retried.body.seq + 1);
  const dup = await post(`/sessions/${s.session_id}/external-sessions`, { provider: 'chat', external_id: 'c1' });
  assert.equal(errorOf(dup).code, 'external_session_exists', 'the workflow kept its conversations');

  const got = (await call('GET', `/sessions/${s.session_id}`, { key, base: api.base })).body;
  assert.equal(got.version, 2);
  assert.deepEqual(got.execution_plan.steps.map((x: any) => [x.id, x.status]), [['a', 'done'], ['b', 'started']]);
  assert.deepEqual(got.progress.recent.map((p: any) => [p.seq, p.step_id, p.status]), [[3, 'b', 'started'], [2, 'a', 'done'], [1, 'a', 'started']]);
  const connection = await Connection.connect({ address: temporal.address });
  try {
    const state = await new Client({ connection }).workflow.getHandle(sessionWorkflowId(s.session_id)).query('sessionState') as { seq: number; version: number };
    assert.deepEqual([state.seq, state.version], [3, 2], 'the workflow and Postgres agree');
  } finally {
    await connection.close();
  }
});

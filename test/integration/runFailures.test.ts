import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorOf, closeTestDb, newAccount, testDb, spawnWorker, waitForRun, driverPid, processAlive, publishFixtureLab, useTestProfiles } from '../helpers.ts';
import { getBalances } from '../../storage/ledger.ts';

const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });


useTestProfiles(
  { id: 'test-killable', title: 'Test profile served by a worker this test kills', schedule_to_start_seconds: 120 },
  { id: 'test-gpu-none', title: 'Test GPU profile nobody serves', kind: 'gpu', vcpus: 8, memory_mib: 65536, gpu: 'test', price_per_second_micros: 1000, schedule_to_start_seconds: 3, sort: 91 },
);
after(closeTestDb);
let owner: Awaited<ReturnType<typeof newAccount>>;
let slowRef = '';
before(async () => {
  owner = await newAccount({ usd: 20 });
  slowRef = await publishFixtureLab(owner, 'slow-lab');
});

async function ledgerOf(runId: string) {
  return testDb()('ledger_txns').where({ ref: `run:${runId}` }).orderBy('id').select('kind');
}

test('a profile with no worker fails with capacity_unavailable after its schedule-to-start bound and releases the whole reservation', async () => {
  const before = await getBalances(testDb(), owner.account.id);
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/microbial-growth@1.0.0', compute_profile: 'test-gpu-none', max_runtime_seconds: 60 } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.credits_reserved, 0.06);
  const run = await waitForRun(owner.key, res.body.id, 30000);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.code, 'capacity_unavailable');
  assert.equal(run.credits_settled, 0);
  assert.deepEqual(await getBalances(testDb(), owner.account.id), before);
  assert.deepEqual((await ledgerOf(run.id)).map((t) => t.kind), ['reserve', 'settle']);
});

test('kill -9 of the worker mid-run, then a restart: the run reaches a correct terminal state, reserved and settled exactly once', { timeout: 180_000 }, async () => {
  let worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: 'test-killable' });
  try {
    const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: slowRef, compute_profile: 'test-killable', inputs: { seconds_per_window: 0.2, busy_seconds: 4 }, max_runtime_seconds: 300 } });
    assert.equal(res.status, 200, res.text);
    const pid = await driverPid(owner.key, res.body.id);
    await new Promise((r) => setTimeout(r, 1000));
    worker.proc.kill('SIGKILL');
    const alive = () => processAlive(pid);
    const t0 = Date.now();
    while (alive() && Date.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 100));
    assert.ok(!alive(), 'the orphaned driver stopped with its worker');
    worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: 'test-killable' });
    const run = await waitForRun(owner.key, res.body.id, 120000);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.deepEqual((await ledgerOf(run.id)).map((t) => t.kind), ['reserve', 'settle'], 'reserved and settled exactly once');
    const b = await getBalances(testDb(), owner.account.id);
    assert.equal(b.reserved_micros, 0);
    const events = (await call('GET', `/runs/${run.id}/events?limit=1000`, { key: owner.key })).body.items;
    assert.deepEqual(events.map((e: any) => e.seq), events.map((_: unknown, i: number) => i + 1));
    assert.equal(events.filter((e: any) => e.type === 'charge_settled').length, 1);
  } finally {
    await worker.stop();
  }
});

test('cancelling a queued run ends it cancelled with nothing charged', async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/microbial-growth@1.0.0', compute_profile: 'test-gpu-none', max_runtime_seconds: 60 } });
  const cancel = await call('POST', `/runs/${res.body.id}/cancel`, { key: owner.key });
  assert.equal(cancel.status, 200);
  const run = await waitForRun(owner.key, res.body.id, 20000);
  assert.ok(['cancelled'].includes(run.status), run.status);
  assert.equal(run.credits_settled, 0);
  assert.equal(errorOf(await call('GET', `/runs/${crypto.randomUUID()}/results`, { key: owner.key })).code, 'run_not_found');
});

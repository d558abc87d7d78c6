import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, closeTestDb, newAccount, publishFixtureLab, spawnWorker, testDb, testObjects, until, useTestProfiles, waitForRun } from '../helpers.ts';
import { getBalances } from '../../storage/ledger.ts';

// Every way a run can end, on the real stack, each with its precise error, its charge,
// and what it leaves (timed_out and the sandbox limits are in sandbox.test.ts).

const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
const PROFILE = { id: 'test-upload-kill', title: 'Test profile whose worker is killed while it stores artifacts' };
useTestProfiles(PROFILE);
after(closeTestDb);
let owner: Awaited<ReturnType<typeof newAccount>>;
let hostile = '';
before(async () => {
  owner = await newAccount({ usd: 20 });
  hostile = await publishFixtureLab(owner, 'hostile-lab');
});

async function runHostile(attack: number) {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: hostile, inputs: { attack, target: { ports: [], hosts: [], paths: [] } }, max_runtime_seconds: 60 } });
  assert.equal(res.status, 200, res.text);
  return waitForRun(owner.key, res.body.id, 120000);
}

test("lab_error: the lab's exception is the error, and its last stderr lines are log events", async () => {
  const run = await runHostile(16);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.code, 'lab_error');
  assert.match(run.error.message, /ValueError: the attacker gave up/);
  const events = (await call('GET', `/runs/${run.id}/events?limit=1000`, { key: owner.key })).body.items as any[];
  const stderr = events.filter((e) => e.type === 'log' && e.data.stream === 'stderr').map((e) => e.message);
  assert.deepEqual(stderr.filter((m) => m.startsWith('attacker:')), ['attacker: diagnostic line 0', 'attacker: diagnostic line 1', 'attacker: diagnostic line 2']);
  assert.ok(run.credits_settled > 0, "the lab's own failure is charged for what it used");
});

test('output_contract_violation: a lab that completes without an output it declares fails, with the output named', async () => {
  const run = await runHostile(17);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.code, 'output_contract_violation');
  assert.match(run.error.message, /Declared outputs missing: report/);
  assert.equal(run.artifact_count, 0, 'nothing stored for a run that broke its contract');
});

test('a package whose stored bytes no longer match its digest is refused before anything runs, and costs nothing', async () => {
  const own = await newAccount({ usd: 5 });
  const ref = await publishFixtureLab(own, 'hostile-lab');
  const [ns, rest] = ref.split('/');
  const release = await testDb()('releases').where({ namespace: ns, name: rest!.split('@')[0], version: '1.0.0' }).first();
  const original = await testObjects().getBytes(release.archive_key);
  await testObjects().putObject(release.archive_key, Buffer.concat([original.subarray(0, original.length - 1), Buffer.from([original[original.length - 1]! ^ 1])]));
  try {
    const res = await call('POST', '/runs', { key: own.key, headers: idem(), body: { ref, inputs: { attack: 0, target: { ports: [], hosts: [], paths: [] } }, max_runtime_seconds: 60 } });
    const run = await waitForRun(own.key, res.body.id, 60000);
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'artifact_store_error');
    assert.match(run.error.message, /does not match its digest/);
    assert.equal(run.credits_settled, 0);
    const events = (await call('GET', `/runs/${run.id}/events?limit=1000`, { key: own.key })).body.items as any[];
    assert.ok(!events.some((e) => e.data.pid), 'no lab process was started');
  } finally {
    await testObjects().putObject(release.archive_key, original);
  }
});

test('a worker killed while it stores artifacts: another worker runs it again, each artifact is recorded once, reserved and settled once', { timeout: 240_000 }, async () => {
  const ref = await publishFixtureLab(owner, 'long-trajectory');
  let worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
  try {
    const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref, compute_profile: PROFILE.id, inputs: {}, max_runtime_seconds: 300 } });
    assert.equal(res.status, 200, res.text);
    await until(120000, async () => {
      const events = (await call('GET', `/runs/${res.body.id}/events?limit=1000`, { key: owner.key })).body.items as any[];
      return events.some((e) => e.type === 'artifact_stored') ? true : undefined;
    });
    worker.proc.kill('SIGKILL');
    worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
    const run = await waitForRun(owner.key, res.body.id, 180000);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const rows = await testDb()('run_artifacts').where({ run_id: run.id }).pluck('file_name');
    assert.equal(new Set(rows).size, rows.length, 'each artifact once');
    assert.equal(run.artifact_count, rows.length);
    assert.deepEqual([...rows].sort(), ['order.csv', 'order.svg', 'outputs.json', 'phases.csv']);
    const ledger = await testDb()('ledger_txns').where({ ref: `run:${run.id}` }).orderBy('id').pluck('kind');
    assert.deepEqual(ledger, ['reserve', 'settle']);
    assert.equal((await getBalances(testDb(), owner.account.id)).reserved_micros, 0);
  } finally {
    await worker.stop();
  }
});

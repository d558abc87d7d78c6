import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BASE_URL, call, closeTestDb, errorOf, newAccount, publishFixtureLab, testDb, testObjects, waitForRun } from '../helpers.ts';
import { digestJson } from '../../storage/digest.ts';
import { digestInput } from '../../storage/db/plans.ts';

// Run inputs of type `file` name the caller's own files: resolved at plan time (another
// account's id is a 404 exactly like a missing one), checked again at execution, and
// staged read-only for the lab, whose output depends on what it reads.

const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
let owner: Awaited<ReturnType<typeof newAccount>>;
let ref = '';
before(async () => {
  owner = await newAccount({ usd: 5 });
  ref = await publishFixtureLab(owner, 'csv-reader');
});
after(closeTestDb);

async function upload(key: string, text: string) {
  const form = new FormData();
  form.append('file', new Blob([text]), 'counts.csv');
  return (await (await fetch(`${BASE_URL}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form })).json()) as any;
}

test('a lab reads the CSV file it was given; its outputs are what the file holds', async () => {
  for (const [text, rows, total] of [['gene,count\nlacI,12\ntetR,7\n', 2, 19], ['gene,count\na,1\nb,2\nc,3\nd,4\n', 4, 10]] as const) {
    const f = await upload(owner.key, text);
    const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref, inputs: { table: f.file_id }, max_runtime_seconds: 60 } });
    assert.equal(res.status, 200, res.text);
    const run = await waitForRun(owner.key, res.body.id);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    const out = (await call('GET', `/runs/${run.id}/results`, { key: owner.key })).body.outputs;
    assert.deepEqual([out.rows, out.total], [rows, total]);
    assert.equal(run.inputs.table, f.file_id, 'the run records the file id, not a path');
  }
});

test("another account's file as an input is 404 exactly like a missing id, at plan time", async () => {
  const stranger = await newAccount();
  const theirs = await upload(stranger.key, 'gene,count\nx,1\n');
  const foreign = await call('POST', '/run-plans', { key: owner.key, body: { capability_ref: ref, inputs: { table: theirs.file_id } } });
  const missing = await call('POST', '/run-plans', { key: owner.key, body: { capability_ref: ref, inputs: { table: crypto.randomUUID() } } });
  assert.equal(foreign.status, 404);
  assert.deepEqual({ ...errorOf(foreign), request_id: null }, { ...errorOf(missing), request_id: null });
  assert.equal(errorOf(foreign).code, 'file_not_found');
  assert.equal(errorOf(foreign).param, 'inputs.table');
});

test('a file whose stored bytes changed after planning fails the run as input_unavailable before anything runs, charging nothing', async () => {
  const f = await upload(owner.key, 'gene,count\nlacI,5\n');
  const row = await testDb()('files').where({ id: f.file_id }).first();
  await testObjects().putObject(row.object_key, Buffer.from('gene,count\nlacI,500\n'));
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref, inputs: { table: f.file_id }, max_runtime_seconds: 60 } });
  assert.equal(res.status, 200, res.text);
  const run = await waitForRun(owner.key, res.body.id);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.code, 'input_unavailable');
  assert.match(run.error.message, /no longer match their digest/);
  assert.equal(run.credits_settled, 0);
});

test('an approved plan is checked again when it runs: a file input no longer the caller\'s is 404 on it, a runtime the platform moved from is 409 plan_unavailable; nothing is accepted either way', async () => {
  const runsBefore = await testDb()('runs').where({ account_id: owner.account.id }).count<{ count: string }[]>('* as count');
  const plan = async (inputs: Record<string, unknown>) => {
    const res = await call('POST', '/run-plans', { key: owner.key, body: { capability_ref: ref, inputs, max_runtime_seconds: 60 } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'ready', res.text);
    return { plan_id: res.body.plan_id as string, plan_sha256: res.body.plan_sha256 as string };
  };

  // The file moves to another account after the plan was approved (as if it were taken back).
  const f = await upload(owner.key, 'gene,count\nlacI,5\n');
  const withFile = await plan({ table: f.file_id });
  const stranger = await newAccount();
  await testDb()('files').where({ id: f.file_id }).update({ account_id: stranger.account.id });
  const gone = await call('POST', '/runs', { key: owner.key, headers: idem(), body: withFile });
  assert.equal(gone.status, 404, gone.text);
  assert.equal(errorOf(gone).code, 'file_not_found');
  assert.equal(errorOf(gone).param, 'inputs.table');

  // The plan names a runtime lock the platform no longer runs (its default moved on since).
  const mine = await upload(owner.key, 'gene,count\nlacI,5\n');
  const older = await plan({ table: mine.file_id });
  const row = await testDb()('plans').where({ id: older.plan_id }).first();
  const proposal = { ...row.proposal, runtime_sha256: 'f'.repeat(64) };
  const planSha256 = digestJson(digestInput({ ...row, proposal }));
  await testDb()('plans').where({ id: older.plan_id }).update({ proposal, plan_sha256: planSha256 });
  const moved = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { plan_id: older.plan_id, plan_sha256: planSha256 } });
  assert.equal(moved.status, 409, moved.text);
  assert.equal(errorOf(moved).code, 'plan_unavailable');
  assert.match(errorOf(moved).message, /changed since this plan was prepared/);

  const runsAfter = await testDb()('runs').where({ account_id: owner.account.id }).count<{ count: string }[]>('* as count');
  assert.equal(runsAfter[0]!.count, runsBefore[0]!.count, 'no run was accepted');
});

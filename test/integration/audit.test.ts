import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { BASE_URL, call, closeTestDb, newAccount, testDb, testObjects, waitForRun } from '../helpers.ts';
import { auditLedger } from '../../storage/db/audit.ts';
import { auditObjects } from '../../storage/objectAudit.ts';
import { getFile } from '../../storage/db/files.ts';

after(closeTestDb);

const run = async (key: string) => {
  const res = await call('POST', '/runs', { key, headers: { 'Idempotency-Key': randomUUID() }, body: { ref: 'platform/sir-epidemic@1.0.0', inputs: {} } });
  assert.equal(res.status, 200, res.text);
  return (await waitForRun(key, res.body.id)).id as string;
};

test('the ledger audit finds nothing wrong after real runs, and finds each kind of damage when it is made', async () => {
  const owner = await newAccount({ usd: 2 });
  const db = testDb();
  const [a, b] = await Promise.all([run(owner.key), run(owner.key)]);
  const clean = await auditLedger(db, [owner.account.id]);
  assert.deepEqual(clean.runs, { accepted: 2, terminal: 2, open: 0 });
  assert.equal(clean.reservations, 2);
  assert.equal(clean.settlements, 2);
  assert.deepEqual(Object.values(clean.problems), [0, 0, 0, 0, 0, 0], JSON.stringify(clean.problems));

  // Damage of each kind, made by hand: a balance off its ledger, a gap in a run's events,
  // a run whose record says another charge than its settlement, a settlement gone.
  await db('compute_balances').where({ account_id: owner.account.id }).increment('available_micros', 1);
  await db('run_events').where({ run_id: a, seq: 2 }).delete();
  await db('runs').where({ id: a }).increment('settled_micros', 1);
  const settle = await db('ledger_txns').where({ kind: 'settle', ref: `run:${b}` }).first();
  await db('ledger_entries').where({ txn_id: settle.id }).delete();
  await db('ledger_txns').where({ id: settle.id }).delete();
  const damaged = await auditLedger(db, [owner.account.id]);
  assert.deepEqual(damaged.problems, {
    balances_off_ledger: 1, terminal_runs_unsettled: 1, runs_charged_wrongly: 1, unbalanced_transactions: 0, runs_with_event_gaps: 1, purchases_credited_wrongly: 0,
  });
  // Another account's figures are its own.
  const other = await newAccount({ usd: 1 });
  assert.deepEqual(Object.values((await auditLedger(db, [other.account.id])).problems), [0, 0, 0, 0, 0, 0]);
});

test('the object audit re-hashes every artifact and file of an account: clean after real work, and it finds bytes changed or gone', async () => {
  const owner = await newAccount({ usd: 1 });
  await run(owner.key);
  const upload = async () => {
    const form = new FormData();
    form.append('file', new Blob([new TextEncoder().encode(`audited ${randomUUID()}`)]), 'a.txt');
    const res = await fetch(`${BASE_URL}/files`, { method: 'POST', headers: { Authorization: `Bearer ${owner.key}` }, body: form });
    const { file_id } = await res.json() as { file_id: string };
    return (await getFile(testDb(), file_id, owner.account.id))!.object_key;
  };
  const [changed, gone] = [await upload(), await upload()];
  const clean = await auditObjects(testDb(), testObjects(), [owner.account.id]);
  assert.ok(clean.artifacts >= 1);
  assert.deepEqual({ differ: clean.bytes_differ, missing: clean.objects_missing }, { differ: 0, missing: 0 });
  // Each upload has an object of its own (files/<id>), so damaging them touches no one else's.
  await testObjects().putObject(changed, Buffer.from('other bytes'));
  await testObjects().delete(gone);
  const damaged = await auditObjects(testDb(), testObjects(), [owner.account.id]);
  assert.deepEqual({ differ: damaged.bytes_differ, missing: damaged.objects_missing }, { differ: 1, missing: 1 });
});

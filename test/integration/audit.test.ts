import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { call, closeTestDb, newAccount, testDb, waitForRun } from '../helpers.ts';
import { auditLedger } from '../../storage/db/audit.ts';

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
  assert.deepEqual(Object.values(clean.problems), [0, 0, 0, 0, 0], JSON.stringify(clean.problems));

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
    balances_off_ledger: 1, terminal_runs_unsettled: 1, runs_charged_wrongly: 1, unbalanced_transactions: 0, runs_with_event_gaps: 1,
  });
  // Another account's figures are its own.
  const other = await newAccount({ usd: 1 });
  assert.deepEqual(Object.values((await auditLedger(db, [other.account.id])).problems), [0, 0, 0, 0, 0]);
});

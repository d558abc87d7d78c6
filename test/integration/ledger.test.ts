import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { closeTestDb, newAccount, testDb } from '../helpers.ts';
import { getBalances, reserveCompute, settleCompute } from '../../storage/ledger.ts';

after(closeTestDb);

async function entriesSum(accountId: string): Promise<number> {
  const row = await testDb()('ledger_entries').where({ account_id: accountId }).sum<{ sum: string }[]>('amount_micros as sum').first();
  return Number(row?.sum ?? 0);
}

test('100 parallel reservations against a balance covering 10: exactly 10 succeed, nothing negative, entries sum to zero', async () => {
  const { account } = await newAccount({ usd: 10 });
  const results = await Promise.all(Array.from({ length: 100 }, (_, i) => reserveCompute(testDb(), account.id, 1_000_000, `run-${account.id}-${i}`)));
  assert.equal(results.filter(Boolean).length, 10);
  const b = await getBalances(testDb(), account.id);
  assert.deepEqual(b, { available_micros: 0, reserved_micros: 10_000_000, spent_micros: 0 });
  assert.equal(await entriesSum(account.id), 0);
  const txns = await testDb()('ledger_txns').where({ account_id: account.id, kind: 'reserve' }).count<{ count: string }[]>('* as count').first();
  assert.equal(Number(txns?.count), 10, 'refused reservations leave no entries');
});

test('reserve and settle happen exactly once per run whatever the retries; charge never exceeds the reservation', async () => {
  await fc.assert(fc.asyncProperty(
    fc.array(fc.record({ reserve: fc.integer({ min: 0, max: 3_000_000 }), actual: fc.integer({ min: 0, max: 4_000_000 }), retries: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 6 }),
    async (runs) => {
      const { account } = await newAccount({ usd: 5 });
      let available = 5_000_000;
      let spent = 0;
      for (const [i, r] of runs.entries()) {
        const ref = `run-${account.id}-${i}`;
        const outcomes = await Promise.all(Array.from({ length: r.retries }, () => reserveCompute(testDb(), account.id, r.reserve, ref)));
        const ok = r.reserve <= available;
        assert.ok(outcomes.every((o) => o === ok), `reserve ${r.reserve} of ${available}: ${outcomes}`);
        if (!ok) continue;
        available -= r.reserve;
        const settles = await Promise.all(Array.from({ length: r.retries }, () => settleCompute(testDb(), account.id, ref, r.actual)));
        const charged = Math.min(r.actual, r.reserve);
        for (const s of settles) assert.deepEqual(s, { charged_micros: charged, released_micros: r.reserve - charged });
        available += r.reserve - charged;
        spent += charged;
      }
      assert.deepEqual(await getBalances(testDb(), account.id), { available_micros: available, reserved_micros: 0, spent_micros: spent });
      assert.equal(await entriesSum(account.id), 0);
    },
  ), { numRuns: 25 });
});

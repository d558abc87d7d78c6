import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { closeTestDb, newAccount, newRunRow as newRun, testDb } from '../helpers.ts';
import { appendEvent, appendEvents, insertAcceptedRun } from '../../storage/db/runs.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { acquireRunSlot, finishRun } from '../../storage/runLifecycle.ts';
import { getBalances } from '../../storage/ledger.ts';
import { isSqlState, SQLSTATE } from '../../storage/db/sqlStates.ts';
import { newUuid } from '../../storage/ids.ts';
import { getRun } from '../../storage/db/runs.ts';
import { createDb } from '../../storage/db/knex.ts';

// The run transitions are database functions (migration 016); these tests hold them to
// their promises under concurrency, straight against Postgres.

after(closeTestDb);

const events = (runId: string) => testDb()('run_events').where({ run_id: runId }).orderBy('seq').select('seq', 'type', 'data');
const ledgerTxns = (ref: string) => testDb()('ledger_txns').where({ ref }).select('kind');

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

test('a run is accepted all or nothing: a used plan or a short balance leaves no run, no reservation and the plan as it was', async () => {
  const { account } = await newAccount({ usd: 1 });
  const plan = await createPlan(testDb(), { accountId: account.id, kind: 'run', proposal: { any: 1 }, findings: [], ttlSeconds: 60 });
  const first = await insertAcceptedRun(testDb(), newRun(account.id, { plan_id: plan.id }));
  assert.equal(first.status, 'queued');
  assert.deepEqual((await events(first.id)).map((e) => [e.seq, e.type, e.data]), [[1, 'state_changed', { status: 'queued' }]]);

  const again = newRun(account.id, { plan_id: plan.id });
  assert.ok(isSqlState(await rejection(insertAcceptedRun(testDb(), again)), SQLSTATE.planUsed));
  assert.equal(await testDb()('runs').where({ id: again.id }).first(), undefined);
  assert.deepEqual(await ledgerTxns(`run:${again.id}`), []);
  assert.equal((await testDb()('plans').where({ id: plan.id }).first('result_ref')).result_ref, `run:${first.id}`);

  const fresh = await createPlan(testDb(), { accountId: account.id, kind: 'run', proposal: { any: 2 }, findings: [], ttlSeconds: 60 });
  const before = await getBalances(testDb(), account.id);
  const tooDear = newRun(account.id, { plan_id: fresh.id, reserved_micros: before.available_micros + 1 });
  assert.ok(isSqlState(await rejection(insertAcceptedRun(testDb(), tooDear)), SQLSTATE.insufficientCompute));
  assert.equal(await testDb()('runs').where({ id: tooDear.id }).first(), undefined);
  assert.deepEqual(await ledgerTxns(`run:${tooDear.id}`), []);
  assert.equal((await testDb()('plans').where({ id: fresh.id }).first('consumed_at')).consumed_at, null, 'the plan stays usable');
  assert.deepEqual(await getBalances(testDb(), account.id), before);
});

test('twelve queued runs of one account racing for four slots: exactly four run, each with one running event; a retry adds none', async () => {
  const { account } = await newAccount({ usd: 1 });
  const runs = [];
  for (let i = 0; i < 12; i++) runs.push(await insertAcceptedRun(testDb(), newRun(account.id)));
  const answers = await Promise.all(runs.map((r) => acquireRunSlot(testDb(), r.id, 4)));
  assert.deepEqual(answers.filter((a) => a === 'running').length, 4, answers.join());
  assert.deepEqual(answers.filter((a) => a === 'wait').length, 8, answers.join());
  const running = runs.filter((_, i) => answers[i] === 'running');
  for (const r of running) {
    assert.equal(await acquireRunSlot(testDb(), r.id, 4), 'running', 'a retried acquisition answers the slot it holds');
    assert.deepEqual((await events(r.id)).map((e) => [e.seq, e.type, e.data]), [[1, 'state_changed', { status: 'queued' }], [2, 'state_changed', { status: 'running' }]]);
  }
  const { count } = (await testDb()('runs').where({ account_id: account.id, status: 'running' }).count<{ count: string }[]>('* as count').first())!;
  assert.equal(Number(count), 4);
});

test('concurrent endings of one run settle it once: one charge, one pair of terminal events; a later ending changes nothing', async () => {
  const { account } = await newAccount({ usd: 1 });
  const before = await getBalances(testDb(), account.id);
  const run = await insertAcceptedRun(testDb(), newRun(account.id, { reserved_micros: 50_000 }));
  assert.equal(await acquireRunSlot(testDb(), run.id, 4), 'running');
  const ends = await Promise.all(Array.from({ length: 8 }, () => finishRun(testDb(), { runId: run.id, status: 'completed', computeSeconds: 0.5, outputs: { n: 1 } })));
  assert.deepEqual(new Set(ends), new Set(['completed']));

  const { price_per_second_micros: price } = await testDb()('compute_profiles').where({ id: 'cpu-small' }).first('price_per_second_micros');
  const charged = Math.min(Math.ceil(0.5 * price), 50_000);
  assert.deepEqual((await ledgerTxns(`run:${run.id}`)).map((t) => t.kind).sort(), ['reserve', 'settle']);
  assert.deepEqual(await getBalances(testDb(), account.id), {
    available_micros: before.available_micros - charged, reserved_micros: 0, spent_micros: before.spent_micros + charged,
  });
  const ended = await testDb()('runs').where({ id: run.id }).first('status', 'settled_micros', 'outputs', 'progress', 'finished_at');
  assert.equal(ended.status, 'completed');
  assert.equal(ended.settled_micros, charged);
  assert.deepEqual(ended.outputs, { n: 1 });
  assert.equal(ended.progress, 1);
  assert.ok(ended.finished_at);
  const tail = (await events(run.id)).slice(2).map((e) => [e.seq, e.type, e.data]);
  assert.deepEqual(tail, [[3, 'charge_settled', { charged_micros: charged, released_micros: 50_000 - charged }], [4, 'state_changed', { status: 'completed' }]]);

  assert.equal(await finishRun(testDb(), { runId: run.id, status: 'failed', error: { code: 'internal_error', message: 'late' }, computeSeconds: 9 }), 'completed');
  assert.equal((await events(run.id)).length, 4);
  assert.equal((await testDb()('runs').where({ id: run.id }).first('settled_micros')).settled_micros, charged);
});

test("a run's terminal event stays its last: what its execution appends after the end is dropped, and the appenders answer the terminal seq", async () => {
  const { account } = await newAccount({ usd: 1 });
  const run = await insertAcceptedRun(testDb(), newRun(account.id));
  assert.equal(await acquireRunSlot(testDb(), run.id, 4), 'running');
  assert.equal(await appendEvent(testDb(), run.id, 'log', 'while running'), 3);
  assert.equal(await finishRun(testDb(), { runId: run.id, status: 'cancelled', computeSeconds: 0.1 }), 'cancelled');
  const ended = await events(run.id);
  assert.deepEqual(ended.slice(-2).map((e) => [e.seq, e.type]), [[4, 'charge_settled'], [5, 'state_changed']]);
  // A lab's last log lines, flushed by a worker that had not yet stopped it.
  assert.equal(await appendEvents(testDb(), run.id, [{ type: 'log', message: 'late line', data: {} }, { type: 'progress', message: 'late', data: { fraction: 0.5 } }]), 5);
  assert.equal(await appendEvent(testDb(), run.id, 'artifact_stored', 'late artifact'), 5);
  assert.deepEqual(await events(run.id), ended);
  assert.equal((await testDb()('runs').where({ id: run.id }).first('event_seq')).event_seq, 5);
  await assert.rejects(appendEvents(testDb(), newUuid(), [{ type: 'log', message: 'x', data: {} }]), /no run/);
});

test('an ending without a measure charges wall time since execution began, and nothing for a run that never began', async () => {
  const { account } = await newAccount({ usd: 1 });
  const never = await insertAcceptedRun(testDb(), newRun(account.id));
  assert.equal(await finishRun(testDb(), { runId: never.id, status: 'cancelled' }), 'cancelled');
  assert.equal((await testDb()('runs').where({ id: never.id }).first('settled_micros')).settled_micros, 0);

  const began = await insertAcceptedRun(testDb(), newRun(account.id, { reserved_micros: 1_000_000 }));
  await acquireRunSlot(testDb(), began.id, 4);
  await testDb()('runs').where({ id: began.id }).update({ started_at: testDb().raw(`now() - interval '2 seconds'`) });
  await finishRun(testDb(), { runId: began.id, status: 'failed', error: { code: 'worker_lost', message: 'gone' } });
  const { price_per_second_micros: price } = await testDb()('compute_profiles').where({ id: 'cpu-small' }).first('price_per_second_micros');
  const { settled_micros: settled } = await testDb()('runs').where({ id: began.id }).first('settled_micros');
  assert.ok(settled >= 2 * price && settled <= Math.min(3 * price, 1_000_000), `charged ${settled} for about 2 s at ${price}/s`);
  const last = (await events(began.id)).at(-1)!;
  assert.deepEqual(last.data, { status: 'failed', error: { code: 'worker_lost', message: 'gone' } });
});

test('prepared statements survive a migration that adds a column (they name their columns)', async () => {
  const { account } = await newAccount({ usd: 1 });
  const run = await insertAcceptedRun(testDb(), newRun(account.id));
  // One connection, so the second read reuses the statement the first one prepared.
  const one = createDb(process.env.DATABASE_URL!, { poolMax: 1 });
  try {
    assert.equal((await getRun(one, run.id))?.id, run.id);
    await testDb().raw('ALTER TABLE runs ADD COLUMN probe_added_later integer');
    try {
      assert.equal((await getRun(one, run.id))?.id, run.id, 'with SELECT * Postgres refuses: cached plan must not change result type');
    } finally {
      await testDb().raw('ALTER TABLE runs DROP COLUMN probe_added_later');
    }
  } finally {
    await one.destroy();
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { call, closeTestDb, errorOf, newAccount, testDb, until, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { questionRuns } from '../../api/experiments/accept.ts';
import type { ExperimentProposal } from '../../api/experiments/prepare.ts';
import { acceptExperiment, unacceptExperiment } from '../../storage/db/experiments.ts';
import { createPlan, getPlan } from '../../storage/db/plans.ts';
import { newId } from '../../storage/ids.ts';
import { isSqlState, SQLSTATE } from '../../storage/db/sqlStates.ts';
import { acquireRunSlot, cancelQueuedRun, finishRun } from '../../storage/runLifecycle.ts';
import { auditLedger } from '../../storage/db/audit.ts';
import { assignBatch, batchRunPage, pointOutcomePages, tellPoints, untoldPointPages } from '../../storage/db/studies.ts';
import { PER_RUN_STATISTICS, PER_RUN_TABLES } from '../../storage/db/migrations/058_per_run_table_samples.ts';

// A question study's acceptance at size, on the real Postgres: its runs are accepted as
// one set under one reservation of the study's maximum (migrations 051 and 054), and each
// is still what a lone run's acceptance makes, settled on its own. The
// records are made by the acceptance itself, below the API, so that no worker executes
// 20,480 runs here; the API then reads them.

const ISHIGAMI = path.join(REPO_ROOT, 'test/fixtures/labs/ishigami');
const PARAMETERS = ['x1', 'x2', 'x3'].map((input) => ({ input, low: -Math.PI, high: Math.PI }));

let owner: Awaited<ReturnType<typeof newAccount>>;
let proposal: ExperimentProposal;
before(async () => {
  owner = await newAccount({ usd: 1000 });
  const ws = await workspaceOfLab(owner.key, 'Ishigami', ISHIGAMI);
  const plan = await call('POST', '/experiment-plans', {
    key: owner.key,
    body: {
      name: 'Large', lab: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: 5 },
      sensitivity: { parameters: PARAMETERS, outputs: [{ output: 'y', summary: 'value' }], method: 'sobol', base_sample: 4096, seed: 57 },
    },
  });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  assert.equal(plan.body.run_count, 4096 * 5, 'more than the 10,000 a study took before');
  proposal = (await getPlan(testDb(), plan.body.plan_id, owner.account.id))!.proposal as ExperimentProposal;
});
after(closeTestDb);

type Owner = Awaited<ReturnType<typeof newAccount>>;
const balance = async (who: Owner = owner) => testDb()('compute_balances').where({ account_id: who.account.id }).first('available_micros', 'reserved_micros');

/** Accepts the proposal as the API's acceptance does, under a plan of its own. */
async function accept(p: ExperimentProposal, who: Owner = owner) {
  const id = newId('exp');
  const plan = await createPlan(testDb(), { accountId: who.account.id, kind: 'experiment', proposal: p, findings: [], ttlSeconds: 3600 });
  const runs = questionRuns(id, { account: who.account, key: { id: who.keyId } }, { ...p, design: p.design! });
  const t0 = performance.now();
  const row = await acceptExperiment(testDb(), {
    id, account_id: who.account.id, name: p.name, goal: p.goal, arms: p.arms, plan_id: plan.id,
    workspace_ids: [p.arms[0]!.workspace_id], reserved_micros: p.estimated_max_micros, design: p.design,
  }, runs);
  const seconds = (performance.now() - t0) / 1000;
  // Postgres gave them their ids; these are they, in start order.
  const ids: string[] = await testDb()('experiment_runs').where({ experiment_id: id }).orderBy('position').pluck('run_id');
  return { row, ids, seconds };
}

test('a 20,480-run study is accepted whole under one reservation, each run queued with its first event; its answer lists none of them and says where they are; undone, it leaves no trace', { timeout: 120_000 }, async () => {
  const before = await balance();
  const { row, ids, seconds } = await accept(proposal);
  console.log(`accepted ${ids.length} runs in ${seconds.toFixed(2)} s`);
  const n = ids.length;
  assert.equal(n, proposal.design!.run_count);
  assert.equal(new Set(ids).size, n, 'each run its own id');
  const each = proposal.arms[0]!.estimated_max_micros;
  assert.equal(proposal.estimated_max_micros, n * each);
  const db = testDb();
  const after = await balance();
  assert.equal(before.available_micros - after.available_micros, n * each, 'the balance moved by the study\'s whole maximum');
  assert.equal(after.reserved_micros - before.reserved_micros, n * each);
  // Each run as a lone run's acceptance leaves it: queued, its seed, its own reserved maximum, one first event.
  const counts = await db('runs').where({ experiment_id: row.id }).select(
    db.raw('count(*)::integer AS n'), db.raw(`count(*) FILTER (WHERE status = 'queued' AND event_seq = 1 AND reserved_micros = ?)::integer AS queued`, [each]),
    db.raw('count(DISTINCT seed)::integer AS seeds'),
  ).first();
  assert.deepEqual(counts, { n, queued: n, seeds: 1 });
  // The study's reservation is one transaction of its whole maximum; its runs have none of their own.
  const reserves = await db('ledger_txns as t').join('ledger_entries as e', 'e.txn_id', 't.id').where({ 't.kind': 'reserve', 'e.book': 'reserved' })
    .whereIn('t.ref', [`experiment:${row.id}`, ...ids.map((id) => `run:${id}`)]).select('t.ref', db.raw('e.amount_micros::bigint AS micros'));
  assert.deepEqual(reserves, [{ ref: `experiment:${row.id}`, micros: n * each }]);
  const events = await db('run_events as e').join('runs as r', 'r.id', 'e.run_id').where({ 'r.experiment_id': row.id })
    .select(db.raw(`count(*) FILTER (WHERE e.seq = 1 AND e.type = 'state_changed' AND e.message = 'Run accepted and queued.')::integer AS first, count(*)::integer AS n`)).first();
  assert.deepEqual(events, { first: n, n });
  const order = await db('experiment_runs').where({ experiment_id: row.id }).orderBy('position').select('run_id', 'position', 'replicate');
  assert.deepEqual([order[0].position, order.at(-1).position, order.at(-1).replicate], [1, n, n - 1]);
  assert.ok(order.every((o, i) => o.position === i + 1 && o.replicate === i), 'placed in order across the acceptance\'s slices (migration 057)');

  // Its answer is the same size as a small study's: totals, money and comparison, no run.
  const view = await call('GET', `/experiments/${row.id}`, { key: owner.key });
  assert.equal(view.status, 200, view.text);
  assert.equal(view.body.run_totals.queued, n);
  assert.equal(view.body.arms[0].runs, undefined);
  assert.equal(view.body.detached_runs, undefined);
  assert.equal(view.body.credits_settled, 0);
  assert.ok(view.text.length < 8_000, `${view.text.length} bytes`);
  const listing = await call('GET', `/experiments/${row.id}?include_runs=true`, { key: owner.key });
  assert.equal(listing.status, 422);
  assert.deepEqual([errorOf(listing).code, errorOf(listing).param], ['too_many_runs', 'include_runs']);
  const page = await call('GET', `/experiments/${row.id}/runs?limit=3`, { key: owner.key });
  assert.deepEqual(page.body.items.map((r: any) => r.run_id), ids.slice(0, 3));

  // Undone (its workflow could not start): no run, reservation, event or study is left.
  const u0 = performance.now();
  assert.equal(await unacceptExperiment(db, row.id), true);
  console.log(`undone in ${((performance.now() - u0) / 1000).toFixed(2)} s`);
  assert.deepEqual(await balance(), before);
  assert.equal((await db('runs').where({ experiment_id: row.id }).count<{ n: number }>('* as n').first())!.n, 0);
  assert.equal((await db('ledger_txns').whereIn('ref', [`experiment:${row.id}`, ...ids.slice(0, 1000).map((id) => `run:${id}`)]).count<{ n: number }>('* as n').first())!.n, 0);
  assert.equal((await db('run_events').whereIn('run_id', ids.slice(0, 1000)).count<{ n: number }>('* as n').first())!.n, 0);
  assert.equal(await db('experiments').where({ id: row.id }).first(), undefined);
});

test('each run of a study is settled on its own from the study\'s reservation: charged what it used, the rest released, once; the books balance', { timeout: 60_000 }, async () => {
  const db = testDb();
  const small = { ...proposal, design: { ...proposal.design!, run_count: 4 }, estimated_max_micros: 4 * proposal.arms[0]!.estimated_max_micros } as ExperimentProposal;
  const who = await newAccount({ usd: 10 });
  const before = await balance(who);
  const { ids } = await accept(small, who);
  const each = proposal.arms[0]!.estimated_max_micros;
  const [done, failed, cancelled, open] = ids;
  assert.equal(await acquireRunSlot(db, done!, 10), 'running');
  assert.equal(await finishRun(db, { runId: done!, status: 'completed', computeSeconds: 1 }), 'completed');
  assert.equal(await finishRun(db, { runId: done!, status: 'completed', computeSeconds: 1 }), 'completed', 'a repeated ending changes nothing');
  assert.equal(await acquireRunSlot(db, failed!, 10), 'running');
  assert.equal(await finishRun(db, { runId: failed!, status: 'failed', computeSeconds: 10_000 }), 'failed');
  assert.equal(await cancelQueuedRun(db, cancelled!), 'cancelled');
  // Detached, a run still draws its share from the study it was accepted in.
  await db('experiment_runs').where({ run_id: open }).update({ detached_at: db.fn.now() });
  await db('runs').where({ id: open }).update({ experiment_id: null });
  assert.equal(await cancelQueuedRun(db, open!), 'cancelled');
  const settled = await db('runs').whereIn('id', ids).select('id', 'settled_micros');
  const price = Number((await db('compute_profiles').where({ id: proposal.arms[0]!.compute_profile }).first('price_per_second_micros')).price_per_second_micros);
  const charged = Object.fromEntries(settled.map((r) => [r.id, Number(r.settled_micros)]));
  assert.deepEqual([charged[done!], charged[failed!], charged[cancelled!], charged[open!]], [Math.min(price, each), each, 0, 0], 'each charged what it used, never more than its maximum');
  const end = await balance(who);
  const spent = Math.min(price, each) + each;
  assert.equal(Number(end.reserved_micros), Number(before.reserved_micros), 'the study\'s whole reservation is drawn down by its four runs\' settlements');
  assert.equal(Number(end.available_micros), Number(before.available_micros) - spent);
  const audit = await auditLedger(db, [who.account.id]);
  assert.deepEqual(audit.problems, { balances_off_ledger: 0, terminal_runs_unsettled: 0, runs_charged_wrongly: 0, unbalanced_transactions: 0, runs_with_event_gaps: 0, purchases_credited_wrongly: 0 });
  assert.deepEqual([audit.reservations, audit.settlements], [1, 4]);
});

test('a batch given its parameter sets while one of its runs changes (the run locked, then the study\'s row touched, as a cancel does) waits for that run and completes, and so does the change: no deadlock', { timeout: 60_000 }, async () => {
  const db = testDb();
  const small = { ...proposal, design: { ...proposal.design!, run_count: 4 }, estimated_max_micros: 4 * proposal.arms[0]!.estimated_max_micros } as ExperimentProposal;
  const { row, ids } = await accept(small, await newAccount({ usd: 10 }));
  const change = await db.transaction();
  try {
    const pid = (await change.raw('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    await change('runs').where({ id: ids[2] }).update({ metadata: change.raw('metadata') });
    const assigning = assignBatch(db, row.id, 0, ids.map((_, i) => ({ params: { x1: i, x2: 0, x3: 0 }, attrs: {} })), {});
    await until(10_000, async () => ((await db.raw('SELECT count(*)::integer AS n FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [pid])).rows[0].n > 0 ? true : undefined));
    // What the run's change does next: touch its study's row (runs_touch_experiment).
    await change('experiments').where({ id: row.id }).update({ updated_at: change.fn.now() });
    await change.commit();
    assert.deepEqual((await assigning).map((g) => g.run_id), ids, 'each run given its set, in start order');
  } finally {
    if (!change.isCompleted()) await change.rollback();
  }
});

test('a batch of 4,500 sets is given a slice at a time and read back a page at a time: its runs\' ids, its untold points, its points with what they told, each in the order asked', { timeout: 60_000 }, async () => {
  const db = testDb();
  const n = 4500;
  const sized = { ...proposal, design: { ...proposal.design!, run_count: n }, estimated_max_micros: n * proposal.arms[0]!.estimated_max_micros } as ExperimentProposal;
  const { row, ids } = await accept(sized, await newAccount({ usd: 1000 }));
  const given = await assignBatch(db, row.id, 0, ids.map((_, i) => ({ params: { x1: i, x2: 2 * i, x3: 0.5 }, attrs: {} })), { seed: 7 });
  assert.deepEqual(given.map((g) => g.idx), ids.map((_, i) => i));
  for (const i of [0, 1999, 2000, n - 1]) {
    assert.deepEqual((await db('runs').where({ id: ids[i] }).first('inputs')).inputs, { seed: 7, x1: i, x2: 2 * i, x3: 0.5 }, `run ${i}'s inputs`);
  }
  const paged: string[] = [];
  for (let offset = 0; offset <= n; offset += 2000) {
    const page = await batchRunPage(db, row.id, 0, { offset, limit: 2000 });
    assert.equal(page.runs, n);
    paged.push(...page.runIds);
  }
  assert.deepEqual(paged, ids, 'every run once, in the order given');
  assert.deepEqual(await batchRunPage(db, row.id, 1, { offset: 0, limit: 2000 }), { runIds: [], runs: 0 }, 'a batch not asked');
  const untold = async () => {
    const sizes: number[] = [];
    const idx: number[] = [];
    for await (const page of untoldPointPages(db, row.id, 0)) {
      sizes.push(page.length);
      idx.push(...page.map((p) => p.idx));
      assert.ok(page.every((p) => p.status === 'queued' && p.run_id === ids[p.idx]));
    }
    return { sizes, idx };
  };
  assert.deepEqual((await untold()).sizes, [2000, 2000, 500]);
  await tellPoints(db, row.id, ids.slice(0, 2100).map((_, i) => ({ idx: i, outcome: { y: i / 2 } })));
  const left = await untold();
  assert.deepEqual([left.sizes, left.idx[0], left.idx.at(-1)], [[2000, 400], 2100, n - 1], 'the told points are not read again');
  const read: Array<{ idx: number; x1: number; y: unknown }> = [];
  for await (const page of pointOutcomePages(db, row.id)) read.push(...page.map((p) => ({ idx: p.idx, x1: p.params.x1!, y: p.outcome?.y ?? null })));
  assert.deepEqual(read, ids.map((_, i) => ({ idx: i, x1: i, y: i < 2100 ? i / 2 : null })));
});

test('a 20,480-run study closed before it began ends every run cancelled as a run cancelled alone ends, nothing charged, its whole reservation released, a run another transaction held meanwhile too; the books balance', { timeout: 120_000 }, async () => {
  const who = await newAccount({ usd: 1000 });
  const before = await balance(who);
  const { row, ids } = await accept(proposal, who);
  const db = testDb();
  // One run cancelled alone first: what each of the others' endings must look like.
  const [alone, held] = [ids[0]!, ids[5]!];
  assert.equal(await cancelQueuedRun(db, alone), 'cancelled');
  // Another transaction holds a run (as a batch starting it would) while the study closes.
  const holder = await db.transaction();
  let closed: Awaited<ReturnType<typeof call>>;
  try {
    const pid = (await holder.raw('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    await holder('runs').where({ id: held }).forUpdate().first('id');
    const t0 = performance.now();
    const closing = call('PATCH', `/experiments/${row.id}`, { key: who.key, body: { status: 'closed' } });
    // The slices skip the held run; it is ended on its own once released.
    await until(60_000, async () => ((await db.raw('SELECT count(*)::integer AS n FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [pid])).rows[0].n > 0 ? true : undefined));
    assert.equal((await db('runs').where({ id: held }).first('status')).status, 'queued');
    await holder.commit();
    closed = await closing;
    console.log(`closed (${ids.length} runs cancelled) in ${((performance.now() - t0) / 1000).toFixed(2)} s`);
  } finally {
    if (!holder.isCompleted()) await holder.rollback();
  }
  assert.equal(closed.status, 200, closed.text);
  assert.deepEqual([closed.body.run_totals.total, closed.body.run_totals.cancelled, closed.body.run_totals.queued], [ids.length, ids.length, 0]);
  assert.deepEqual(await balance(who), before);
  const ended = await db('runs').where({ experiment_id: row.id }).first(db.raw(`count(*) FILTER (WHERE status = 'cancelled' AND settled_micros = 0 AND finished_at IS NOT NULL AND event_seq = 3)::integer AS n`));
  assert.equal(ended.n, ids.length, 'each ended cancelled, charged nothing, with its two closing events');
  const eventsOf = async (id: string) => (await db('run_events').where({ run_id: id }).orderBy('seq').select('seq', 'type', 'message', 'data'));
  for (const id of [held, ids[1]!, ids.at(-1)!]) assert.deepEqual(await eventsOf(id), await eventsOf(alone), `run ${id}'s events are a run's cancelled alone`);
  const events = await db('run_events as e').join('experiment_runs as x', 'x.run_id', 'e.run_id').where({ 'x.experiment_id': row.id })
    .first(db.raw('count(*)::integer AS n'), db.raw('count(DISTINCT (e.run_id, e.seq))::integer AS distinct'), db.raw('max(e.seq)::integer AS last'));
  assert.deepEqual(events, { n: 3 * ids.length, distinct: 3 * ids.length, last: 3 }, 'each run\'s three events, no gap, none twice');
  // One reservation, a settlement per run that releases its share of it, every transaction balanced.
  const txns = await db('ledger_txns as t').join('ledger_entries as e', 'e.txn_id', 't.id').where({ 't.account_id': who.account.id }).whereNot({ 't.kind': 'grant' })
    .groupBy('t.kind').orderBy('t.kind').select('t.kind', db.raw('count(DISTINCT t.id)::integer AS n'), db.raw('sum(e.amount_micros)::bigint AS net'),
      db.raw(`sum(e.amount_micros) FILTER (WHERE e.book = 'reserved')::bigint AS reserved`));
  const each = proposal.arms[0]!.estimated_max_micros;
  assert.deepEqual(txns, [
    { kind: 'reserve', n: 1, net: 0, reserved: ids.length * each },
    { kind: 'settle', n: ids.length, net: 0, reserved: -ids.length * each },
  ]);
  const touched = await db('experiments').where({ id: row.id }).first('updated_at', 'closed_at');
  assert.ok(touched.updated_at > touched.closed_at, 'the study\'s row says it changed when its runs ended, after the close');
});

test('a study the balance cannot cover, or a monthly cap does not allow, is refused whole: no run, no reservation', { timeout: 60_000 }, async () => {
  const db = testDb();
  // An account whose balance is one micro-dollar short of the study's maximum.
  const poor = await newAccount({ usd: (proposal.estimated_max_micros - 1) / 1e6 });
  const short = await balance(poor);
  assert.equal(Number(short.available_micros), proposal.estimated_max_micros - 1);
  await assert.rejects(accept(proposal, poor), (err) => isSqlState(err, SQLSTATE.insufficientCompute));
  assert.deepEqual(await balance(poor), short);
  assert.equal((await db('runs').where({ account_id: poor.account.id }).count<{ n: number }>('* as n').first())!.n, 0);
  const before = await balance();
  // A monthly cap below the study's maximum: refused by the check of its total, not run by run.
  await db('accounts').where({ id: owner.account.id }).update({ monthly_cap_micros: proposal.estimated_max_micros - 1 });
  try {
    await assert.rejects(accept(proposal), (err) => isSqlState(err, SQLSTATE.spendCap));
    assert.deepEqual(await balance(), before);
    assert.equal((await db('runs').where({ account_id: owner.account.id }).count<{ n: number }>('* as n').first())!.n, 0);
  } finally {
    await db('accounts').where({ id: owner.account.id }).update({ monthly_cap_micros: null });
  }
});

test('a study\'s runs given their ids (the acceptance an api of the release before 055 calls) are accepted a slice at a time, in order, under one reservation', { timeout: 60_000 }, async () => {
  const who = await newAccount({ usd: 1000 });
  const p = { ...proposal, design: { ...proposal.design!, run_count: 10_001 } };
  const id = newId('exp');
  const plan = await createPlan(testDb(), { accountId: who.account.id, kind: 'experiment', proposal: p, findings: [], ttlSeconds: 3600 });
  const { run } = questionRuns(id, { account: who.account, key: { id: who.keyId } }, p);
  const ids = Array.from({ length: 10_001 }, () => crypto.randomUUID());
  const seeds = ids.map((_, i) => i + 1);
  const trx = await testDb().transaction();
  try {
    await trx.raw('SELECT * FROM silico_accept_experiment(?::jsonb, ?::jsonb, ?)', [JSON.stringify({
      id, account_id: who.account.id, name: p.name, goal: p.goal, arms: p.arms, plan_id: plan.id, workspace_ids: [p.arms[0]!.workspace_id], reserved_micros: p.estimated_max_micros,
    }), '[]', plan.id]);
    await trx.raw('SELECT silico_accept_study_runs(?, ?::jsonb, ?::uuid[], ?::bigint[], 0)', [id, JSON.stringify(run), ids, seeds]);
    const order = await trx('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id').where({ 'x.experiment_id': id }).orderBy('x.position').select('x.run_id', 'x.position', 'r.seed');
    assert.deepEqual(order.map((o) => o.run_id), ids);
    assert.ok(order.every((o, i) => o.position === i + 1 && o.seed === seeds[i]), 'each run its own seed, in the order given');
    const reserves = await trx('ledger_txns').where({ kind: 'reserve', account_id: who.account.id }).pluck('ref');
    assert.deepEqual(reserves, [`experiment:${id}`]);
  } finally {
    await trx.rollback();
  }
});

test('the tables that take a row a run are analysed from a bounded sample: every column, a column added later too, at their target (migration 058)', async () => {
  const targets = await testDb().raw(`SELECT c.relname AS "table", a.attname AS "column", a.attstattarget::integer AS target FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    WHERE c.relname = ANY(?) AND c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped`, [PER_RUN_TABLES]);
  assert.equal(new Set(targets.rows.map((r: { table: string }) => r.table)).size, PER_RUN_TABLES.length);
  assert.deepEqual(targets.rows.filter((r: { target: number }) => r.target !== PER_RUN_STATISTICS), [], 'columns analysed at the default target: give them the per-run target in their migration');
});

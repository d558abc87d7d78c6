/**
 * A study's run, executed in a batch (activities/execution/batch.ts), records exactly what a
 * lone run of the same lab, inputs, seed and profile records: its answer, its row, its
 * events, its settlement, its results and artifacts (byte-identical) and its passport's
 * checks, ids, times and process ids aside, and the study's own marks (its experiment and
 * plan) named. Its reservation is its share of the study's (migration 054): where a lone
 * run has a reservation of its own, the study's run has none, and settles the same. The real stack, a real lab (the one-step Ishigami fixture).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { BASE_URL, call, closeTestDb, newAccount, testDb, until, waitForRun, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { Client, Connection } from '@temporalio/client';
import { experimentWorkflowId } from '../../kernel/workflowNames.ts';
import { consoleRoot } from '../../kernel/workflowMetadata.ts';
import { stateQuery } from '../../workflows/explain.ts';

const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/ishigami');
const PROFILE = 'cpu-small';
after(closeTestDb);

let owner: Awaited<ReturnType<typeof newAccount>>;
let ws: Awaited<ReturnType<typeof workspaceOfLab>>;
before(async () => {
  owner = await newAccount({ usd: 20 });
  ws = await workspaceOfLab(owner.key, 'Ishigami', LAB);
});

/** Ids become their first appearance's place, times `<time>`, process ids `<pid>`: two runs' records compare. */
function normalise(value: unknown): unknown {
  const ids = new Map<string, string>();
  const walk = (v: unknown, key = ''): unknown => {
    if (Array.isArray(v)) return v.map((x) => walk(x));
    if (v instanceof Date) return '<time>';
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    if (typeof v === 'number' && (key === 'pid' || key === 'warm_instance')) return '<pid>';
    if (typeof v !== 'string') return v;
    if (/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)$/.test(v)) return '<time>';
    return v.replace(/\b(process group|warm instance) \d+/g, '$1 <pid>')
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[a-z]+_(?:[0-9a-z]{26}|[0-9a-f]{32})\b/g, (id) => {
        if (!ids.has(id)) ids.set(id, `<id ${ids.size + 1}>`);
        return ids.get(id)!;
      });
  };
  return walk(value);
}

/** Everything a run leaves, read back through the api and from the state of record. */
async function recordOf(runId: string) {
  const db = testDb();
  const run = (await call('GET', `/runs/${runId}`, { key: owner.key })).body;
  const row = await db('runs').where({ id: runId }).first();
  const times = new Set(['created_at', 'queued_at', 'started_at', 'finished_at', 'alive_at', 'updated_at']);
  const txns = await db('ledger_txns').where({ account_id: owner.account.id }).where('ref', 'like', `%${runId}%`).orderBy('id').select('id', 'kind', 'ref', 'memo');
  const results = (await call('GET', `/runs/${runId}/results`, { key: owner.key })).body;
  const passport = await until(60_000, async () => {
    const res = await call('GET', `/passports?run_id=${runId}`, { key: owner.key });
    return res.status === 200 ? res.body : undefined;
  });
  return {
    answer: run,
    row: Object.fromEntries(Object.entries(row).filter(([k]) => !times.has(k))),
    events: (await db('run_events').where({ run_id: runId }).orderBy('seq').select('seq', 'type', 'message', 'data')),
    ledger: await Promise.all(txns.map(async ({ id, ...t }) => ({ ...t, entries: await db('ledger_entries').where({ txn_id: id }).orderBy('id').select('book', 'amount_micros') }))),
    results: { outputs: results.outputs, artifacts: results.artifacts.map((a: Record<string, unknown>) => ({ role: a.role, file_name: a.file_name, sha256: a.sha256, size_bytes: a.size_bytes })) },
    passport: passport.checks ?? passport.passport?.checks ?? null,
  };
}

test('a study\'s run executed in a batch records what a lone run of the same lab, inputs, seed and profile records', { timeout: 300_000 }, async () => {
  const plan = await call('POST', '/experiment-plans', { key: owner.key, body: {
    name: 'Record of a study run', lab: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: PROFILE, max_runtime_seconds: 60, inputs: {} },
    sensitivity: { parameters: ['x1', 'x2', 'x3'].map((input) => ({ input, low: -Math.PI, high: Math.PI })), outputs: [{ output: 'y', summary: 'value' }], method: 'sobol', base_sample: 2, seed: 45 },
  } });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  const study = await call('POST', '/experiments', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(study.status, 200, study.text);
  const done = await until(240_000, async () => {
    const e = (await call('GET', `/experiments/${study.body.id}?include_runs=true`, { key: owner.key })).body;
    return e.completed_at ? e : undefined;
  });
  assert.equal(done.run_totals.completed, 10, JSON.stringify(done.run_totals));
  // What an operator reads of the study in the Temporal UI: what it is and where it stands, ids and figures only.
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  try {
    const handle = new Client({ connection }).workflow.getHandle(experimentWorkflowId(study.body.id));
    const described = await handle.describe();
    assert.equal(await described.staticSummary(), `sensitivity study (sobol, 10 runs) of ${done.arms[0].resolved_ref} on ${PROFILE} for ${owner.account.id}, $${plan.body.estimated_max_usd} reserved`);
    assert.equal(await described.staticDetails(), `Experiment ${study.body.id} of account ${owner.account.id}.\n\n[API](${BASE_URL}/experiments/${study.body.id}) · [console](${consoleRoot(BASE_URL)}experiments/${study.body.id})`);
    // Where it stands, answered by the workflow itself (the UI's Queries tab).
    const state = await handle.query(stateQuery);
    assert.deepEqual({ ...state, runs: undefined, completed: undefined, not_completed: undefined }, { object: 'experiment', experiment_id: study.body.id, status: 'completed', batch: 1, batch_runs: 10, runs: undefined, completed: undefined, not_completed: undefined });
  } finally {
    await connection.close();
  }
  const studyRunId: string = done.arms[0].runs[3].run_id;
  const studied = await testDb()('runs').where({ id: studyRunId }).first();
  // Executed by a batch: no workflow of its own.
  assert.equal(await testDb()('run_events').where({ run_id: studyRunId }).where('message', 'like', '%forked from warm instance%').count('* as n').first().then((r) => Number(r!.n)), 1);

  const lonePlan = await call('POST', '/run-plans', { key: owner.key, body: {
    workspace_id: ws.workspace_id, revision_id: ws.revision_id, inputs: studied.inputs, compute_profile_id: PROFILE, max_runtime_seconds: 60, seed: studied.seed,
  } });
  assert.equal(lonePlan.status, 200, lonePlan.text);
  const lone = await call('POST', '/runs', { key: owner.key, body: { plan_id: lonePlan.body.plan_id, plan_sha256: lonePlan.body.plan_sha256 }, headers: { 'Idempotency-Key': crypto.randomUUID() } });
  assert.ok(lone.status < 300, lone.text);
  assert.equal((await waitForRun(owner.key, lone.body.id)).status, 'completed');

  const a = normalise(await recordOf(studyRunId)) as Record<string, any>;
  const b = normalise(await recordOf(lone.body.id)) as Record<string, any>;
  // What makes it the study's: its experiment, the plan it was accepted under (the
  // study's) and its metadata (where in the study it is).
  assert.equal(a.row.metadata.study, 'sensitivity');
  for (const r of [a, b]) {
    r.row.experiment_id = r.answer.experiment_id = '<experiment>';
    r.row.plan_id = r.answer.plan_id = '<plan>';
    r.row.metadata = r.answer.metadata = '<metadata>';
  }
  const [reservation, ...settled] = b.ledger;
  const held = Number(b.row.reserved_micros);
  assert.deepEqual({ ...reservation, entries: reservation.entries.map((e: { book: string; amount_micros: unknown }) => ({ ...e, amount_micros: Number(e.amount_micros) })) },
    { kind: 'reserve', ref: settled[0].ref, memo: null, entries: [{ book: 'available', amount_micros: -held }, { book: 'reserved', amount_micros: held }] });
  b.ledger = settled;
  assert.deepEqual(a.ledger.map((t: { kind: string }) => t.kind), ['settle'], 'the study\'s run reserved nothing of its own');
  assert.deepEqual(a, b);
});

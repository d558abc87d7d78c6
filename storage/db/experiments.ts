import type { Db } from './knex.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';
import { TERMINAL, type NewRun, type RunStatus } from './runs.ts';
import type { StudyDesign } from '../studyDesign.ts';

export type ExperimentStatus = 'running' | 'completed' | 'closed';

/** One arm as approved: the run preparation's proposal plus its replicate plan. */
export interface ExperimentArm {
  [k: string]: unknown;
  label: string;
  workspace_id: string;
  revision_id: string;
  resolved_ref: string;
  package_sha256: string;
  inputs: Record<string, unknown>;
  compute_profile: string;
  max_runtime_seconds: number;
  replicates: number;
  seed: number;
  fixed_seed: boolean;
  /** Seed of replicate k (0-based): `seed + k`, or `seed` for every replicate when fixed. */
  seeds: number[];
  estimated_max_micros: number;
  /** Outputs the arm's contract declares as numbers: what the comparison summarizes. */
  scalar_outputs: string[];
  /** The environment lock its runs execute in (absent in studies planned before environments). */
  runtime_sha256?: string;
}

/** A stored comparison output (CSV or chart), kept as one of the account's files. */
export interface ExperimentArtifact { file_id: string; file_name: string; content_type: string; format: string; size_bytes: number; sha256: string }

export interface ExperimentRow {
  id: string;
  account_id: string;
  name: string;
  goal: string;
  status: ExperimentStatus;
  plan_id: string | null;
  arms: ExperimentArm[];
  workspace_ids: string[];
  reserved_micros: number;
  artifacts: ExperimentArtifact[];
  /** `arms` compared, or a study that answers a question (migration 040). */
  kind: 'arms' | StudyDesign['kind'];
  design: StudyDesign | null;
  analysis: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  closed_at: Date | null;
}

/** A run of a study, with where it sits in it. */
export interface ExperimentRunRow {
  run_id: string;
  arm_index: number;
  replicate: number;
  position: number;
  detached_at: Date | null;
  status: RunStatus;
  seed: number;
  outputs: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  reserved_micros: number;
  settled_micros: number | null;
}

/** Runs of a study of arms accepted per statement: a slice takes about a second, well within the dependency deadline. */
const ACCEPT_SLICE = 1000;

/** A question study's runs: the record they share (the seed of all; Postgres gives each its id) and how many there are. */
export interface RunSet { run: Omit<NewRun, 'id'>; count: number }

/**
 * Records a study as accepted, all or nothing, in one transaction: consumes its plan,
 * records it running and accepts its runs. A study of arms (at most 200 runs) has each
 * run accepted with its own reservation (silico_accept_experiment, migration 020), a
 * slice per statement (migration 044). A study that answers a question (one lab, every
 * run alike but for its id and seed) has its runs accepted as one set under one
 * reservation of the study's whole maximum, which each run's settlement draws its share
 * from (silico_accept_study_runs, migrations 051, 054 and 055). Raises SQLSTATE.planUsed, SQLSTATE.insufficientCompute
 * or a spend cap's SQLSTATE and changes nothing when it cannot.
 */
export async function acceptExperiment(
  db: Db,
  e: Pick<ExperimentRow, 'id' | 'account_id' | 'name' | 'goal' | 'arms' | 'workspace_ids' | 'reserved_micros'> & { plan_id: string; design?: StudyDesign },
  runs: Array<{ run: NewRun; arm_index: number; replicate: number }> | RunSet,
): Promise<ExperimentRow> {
  const record = JSON.stringify({ ...e, design: undefined });
  return db.transaction(async (trx) => {
    if (!Array.isArray(runs)) {
      // A question study: its runs as one set, under one reservation (migration 054).
      await trx.raw('SELECT * FROM silico_accept_experiment(?::jsonb, ?::jsonb, ?)', [record, '[]', e.plan_id]);
      if (runs.count) await trx.raw('SELECT silico_accept_study_runs(?, ?::jsonb, ?::integer)', [e.id, JSON.stringify(runs.run), runs.count]);
    } else {
      const slices = Array.from({ length: Math.max(1, Math.ceil(runs.length / ACCEPT_SLICE)) }, (_, i) => runs.slice(i * ACCEPT_SLICE, (i + 1) * ACCEPT_SLICE))
        .map((slice) => JSON.stringify(slice.map((r) => ({ ...r, run: { ...r.run, status: 'queued' } }))));
      await trx.raw('SELECT * FROM silico_accept_experiment(?::jsonb, ?::jsonb, ?)', [record, slices[0]!, e.plan_id]);
      for (const [i, slice] of slices.slice(1).entries()) {
        await trx.raw('SELECT silico_accept_experiment_runs(?, ?::jsonb, ?)', [e.id, slice, (i + 1) * ACCEPT_SLICE]);
      }
    }
    // A study that answers a question keeps its kind and design with its acceptance.
    const [row] = e.design
      ? await trx('experiments').where({ id: e.id }).update({ kind: e.design.kind, design: JSON.stringify(e.design) }).returning('*')
      : await trx('experiments').where({ id: e.id });
    return row as ExperimentRow;
  });
}

/** Undoes an acceptance whose workflow could not start (silico_unaccept_experiment); false once any run left the queue. */
export async function unacceptExperiment(db: Db, id: string): Promise<boolean> {
  const { rows } = await db.raw('SELECT silico_unaccept_experiment(?) AS undone', [id]);
  return rows[0].undone as boolean;
}

/** A study of this account, or undefined (another account's study is the same as none). */
export async function getExperiment(db: Db, id: string, accountId?: string): Promise<ExperimentRow | undefined> {
  const q = db('experiments').where({ id });
  if (accountId) q.andWhere({ account_id: accountId });
  return q.first();
}

const CHANGED_AT = `to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;

/** Most recently changed first; keyset-paginated on (updated_at, id). */
export async function listExperiments(
  db: Db, accountId: string, f: { status?: string | null; workspaceId?: string | null; limit: number; after?: Array<string | number> | null },
): Promise<KeysetPage<ExperimentRow>> {
  const q = db('experiments').where({ account_id: accountId }).select('*', db.raw(`${CHANGED_AT} as sort_at`));
  if (f.status) q.andWhere({ status: f.status });
  if (f.workspaceId) q.andWhereRaw('?::uuid = ANY(workspace_ids)', [f.workspaceId]);
  return keysetPage<ExperimentRow>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: CHANGED_AT } });
}

/** Every run a study made (or its first `limit`), detached ones included, in start order. */
export async function experimentRuns(db: Db, experimentId: string, limit?: number): Promise<ExperimentRunRow[]> {
  const q = db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id').where('x.experiment_id', experimentId).orderBy('x.position');
  if (limit !== undefined) q.limit(limit);
  return q.select('x.run_id', 'x.arm_index', 'x.replicate', 'x.position', 'x.detached_at', 'r.status', 'r.seed', 'r.outputs', 'r.error', 'r.reserved_micros', 'r.settled_micros');
}

/** Runs per status of each study (detached runs are no longer the study's). */
export async function runTotals(db: Db, experimentIds: string[]): Promise<Map<string, Record<string, number>>> {
  const out = new Map<string, Record<string, number>>();
  if (!experimentIds.length) return out;
  const rows: Array<{ experiment_id: string; status: string; n: string }> = await db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id')
    .whereIn('x.experiment_id', experimentIds).whereNull('x.detached_at').groupBy('x.experiment_id', 'r.status').select('x.experiment_id', 'r.status', db.raw('count(*) AS n'));
  for (const row of rows) {
    const t = out.get(row.experiment_id) ?? {};
    t[row.status] = Number(row.n);
    out.set(row.experiment_id, t);
  }
  return out;
}

/** A study's runs (ids and arms) in the order its workflow starts them. */
export async function experimentRunOrder(db: Db, experimentId: string): Promise<Array<{ run_id: string; arm_index: number }>> {
  return db('experiment_runs').where({ experiment_id: experimentId }).orderBy('position').select('run_id', 'arm_index');
}

/** Renames or re-goals a study; returns the row afterwards. */
export async function describeExperiment(db: Db, id: string, change: { name?: string; goal?: string }): Promise<void> {
  if (change.name === undefined && change.goal === undefined) return;
  await db('experiments').where({ id }).update({ ...change, updated_at: db.fn.now() });
}

/**
 * Takes the lock on an account's compute balance for the rest of the transaction, before
 * the study's row: a run's ending locks the run, then the balance (its settlement), then
 * the study (its row is touched when a run of it changes), so a transaction that changes
 * the study and then ends its runs must hold the balance first, or it deadlocks with a
 * run ending meanwhile.
 */
export async function lockBalanceFirst(db: Db, accountId: string): Promise<void> {
  await db('compute_balances').where({ account_id: accountId }).forUpdate().first('account_id');
}

/** Runs one statement of `cancelQueuedExperimentRuns` ends at once, and one call of the run-by-run procedure. */
const CANCEL_SLICE = 1000;

/**
 * Ends the study's queued runs as cancelled, nothing charged, their reservations released,
 * with `unassigned` only those never given a parameter set: each ends as a run cancelled
 * on its own would. A slice of runs per statement (silico_cancel_queued_study_runs), then,
 * one at a time in a transaction of its own, any run another transaction held meanwhile
 * and a study's runs that hold reservations of their own (silico_cancel_queued_runs).
 * Stopped midway, a retry ends the rest. Not within a transaction of the caller's.
 */
export async function cancelQueuedExperimentRuns(db: Db, experimentId: string, opts: { unassigned?: boolean } = {}): Promise<number> {
  const args = [experimentId, opts.unassigned ?? false, CANCEL_SLICE];
  /** Calls `slice` until one ends fewer than a slice's runs: how many it ended in all. */
  const inSlices = async (slice: () => Promise<number>): Promise<number> => {
    for (let ended = 0; ;) {
      const n = await slice();
      ended += n;
      if (n < CANCEL_SLICE) return ended;
    }
  };
  const atOnce = await inSlices(async () => Number((await db.raw('SELECT silico_cancel_queued_study_runs(?, ?, ?) AS ended', args)).rows[0].ended ?? 0));
  return atOnce + await inSlices(async () => Number((await db.raw('CALL silico_cancel_queued_runs(?, ?, ?)', args)).rows[0].ended));
}

/** The study's runs running now. */
export async function runningExperimentRuns(db: Db, experimentId: string): Promise<string[]> {
  return db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id').where({ 'x.experiment_id': experimentId, 'r.status': 'running' }).orderBy('x.position').pluck('x.run_id');
}

/** Closes a study (no new runs); a closed study stays closed. */
export async function closeExperiment(db: Db, id: string): Promise<void> {
  await db('experiments').where({ id }).whereNot({ status: 'closed' }).update({ status: 'closed', closed_at: db.fn.now(), updated_at: db.fn.now() });
}

/**
 * Detaches runs from their study: the run stays (with its own record and charge) but no
 * longer counts in the study's totals or comparison. A run detached before is left as it
 * is, so a retry is harmless. Returns the ids that are not runs of this study (nothing is
 * changed when there are any).
 */
export async function detachRuns(db: Db, experimentId: string, runIds: string[]): Promise<string[]> {
  return db.transaction(async (trx) => {
    const rows: Array<{ run_id: string; detached_at: Date | null }> = await trx('experiment_runs').where({ experiment_id: experimentId }).whereIn('run_id', runIds).forUpdate().select('run_id', 'detached_at');
    const missing = runIds.filter((id) => !rows.some((r) => r.run_id === id));
    const attached = rows.filter((r) => !r.detached_at).map((r) => r.run_id);
    if (missing.length || !attached.length) return missing;
    await trx('experiment_runs').whereIn('run_id', attached).update({ detached_at: trx.fn.now() });
    await trx('runs').whereIn('id', attached).update({ experiment_id: null });
    await trx('experiments').where({ id: experimentId }).update({ updated_at: trx.fn.now() });
    return [];
  });
}

/**
 * Records that every run a study made has ended: a running study becomes completed (a
 * closed one stays closed) and `completed_at` is set, once; a study with a run still
 * going is left as it is. True when its runs have all ended.
 */
export async function completeExperiment(db: Db, id: string): Promise<boolean> {
  const open = db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id').where('x.experiment_id', id).whereNotIn('r.status', TERMINAL).select(db.raw('1'));
  await db('experiments').where({ id }).whereNull('completed_at').whereNotExists(open).update({
    status: db.raw(`CASE WHEN status = 'running' THEN 'completed' ELSE status END`), completed_at: db.fn.now(), updated_at: db.fn.now(),
  });
  return Boolean((await db('experiments').where({ id }).first('completed_at'))?.completed_at);
}

export async function setExperimentArtifacts(db: Db, id: string, artifacts: ExperimentArtifact[]): Promise<void> {
  await db('experiments').where({ id }).update({ artifacts: JSON.stringify(artifacts), updated_at: db.fn.now() });
}

/** Studies still running whose creation is older than the cutoff (reconciliation). */
export async function runningExperiments(db: Db, olderThanSeconds: number, limit: number): Promise<string[]> {
  return db('experiments').where({ status: 'running' }).where('created_at', '<', db.raw('now() - make_interval(secs => ?)', [olderThanSeconds])).limit(limit).pluck('id');
}

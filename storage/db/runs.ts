import type { Db } from './knex.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';
import { runPrepared, statement } from './prepared.ts';

export type RunStatus = 'queued' | 'running' | 'cancelling' | 'completed' | 'failed' | 'cancelled' | 'timed_out';
export const TERMINAL: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'timed_out'];

export interface RunRow {
  id: string;
  account_id: string;
  kind: 'hub' | 'managed';
  status: RunStatus;
  ref: string;
  resolved_ref: string;
  release_id: string | null;
  workspace_id: string | null;
  revision_id: string | null;
  package_sha256: string;
  inputs: Record<string, unknown>;
  metadata: Record<string, string>;
  compute_profile: string;
  max_runtime_seconds: number;
  reserved_micros: number;
  settled_micros: number | null;
  seed: number;
  progress: number;
  artifact_count: number;
  outputs: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  experiment_id: string | null;
  /** The environment lock it runs in (null: runs recorded before environments, in the default runtime). */
  runtime_sha256?: string | null;
  plan_id: string | null;
  /** The completed run this one was answered from (nothing ran), or null. */
  reused_from: string | null;
  /** A spend cap lower than its maximum price: its execution stops when its cost reaches it. */
  cap_micros: number | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** The largest event sequence number (run_events.seq is a Postgres integer). */
export const MAX_EVENT_SEQ = 2 ** 31 - 1;

/** RunRow's columns, named for prepared statements (storage/db/prepared.ts). */
const RUN_COLUMNS = `id, account_id, kind, status, ref, resolved_ref, release_id, workspace_id, revision_id, package_sha256, inputs,
  metadata, compute_profile, max_runtime_seconds, reserved_micros, settled_micros, seed, progress, artifact_count, outputs, error,
  experiment_id, plan_id, reused_from, cap_micros, runtime_sha256, created_at, started_at, finished_at`;

export interface RunEvent { seq: number; at: Date; type: string; message: string; data: Record<string, unknown> }

/** The columns a new run is recorded with; the rest take their defaults. */
export type NewRun = Omit<RunRow, 'status' | 'progress' | 'artifact_count' | 'settled_micros' | 'outputs' | 'error' | 'created_at' | 'started_at' | 'finished_at' | 'reused_from' | 'cap_micros'> & {
  /** What makes two runs the same computation, beside package, seed and profile (for reuse). */
  inputs_sha256?: string;
  runtime_sha256?: string;
  /** The key that accepted it: its spend counts against that key's caps. */
  key_id?: string;
  cap_micros?: number | null;
};

/**
 * Records a run as accepted, all or nothing (silico_accept_run, migration 016): consumes
 * its plan if it has one, reserves `reserved_micros` under `run:<id>`, inserts it queued
 * and appends its first event. Raises SQLSTATE.planUsed or SQLSTATE.insufficientCompute
 * (storage/db/sqlStates.ts) and changes nothing when it cannot. With `slots` (the
 * account's concurrency limit), a free slot is taken in the same transaction and the run
 * comes back running (silico_accept_run_running, migration 043).
 */
export async function insertAcceptedRun(db: Db, run: NewRun, opts: { slots?: number } = {}): Promise<RunRow> {
  const record = JSON.stringify({ ...run, status: 'queued' });
  const [row] = opts.slots === undefined
    ? await runPrepared<RunRow>(db, ACCEPT_RUN, [record, run.plan_id])
    : await runPrepared<RunRow>(db, ACCEPT_RUN_RUNNING, [record, run.plan_id, opts.slots]);
  return row!;
}
const ACCEPT_RUN_RUNNING = statement('accept-run-running', `SELECT ${RUN_COLUMNS} FROM silico_accept_run_running($1::jsonb, $2, $3)`);
const ACCEPT_RUN = statement('accept-run', `SELECT ${RUN_COLUMNS} FROM silico_accept_run($1::jsonb, $2)`);

/**
 * Records a run answered from a completed one (silico_reuse_run, migration 028): plan
 * consumed, nothing reserved or charged, the source's outputs and artifact records, and
 * the run completed, all at once. Raises SQLSTATE.planUsed or SQLSTATE.reuseSourceGone.
 */
export async function insertReusedRun(db: Db, run: NewRun, source: { id: string; accountIds: string[] }): Promise<RunRow> {
  const rows = await db.raw(`SELECT ${RUN_COLUMNS} FROM silico_reuse_run(?::jsonb, ?, ?, ?::text[])`, [JSON.stringify({ ...run, status: 'queued' }), run.plan_id, source.id, source.accountIds]);
  return rows.rows[0] as RunRow;
}

/**
 * Where an identical computation may be answered from, in one statement: the caller's own
 * runs, and those of the release's owner when the release and its lab are public and the
 * lab allows reuse (`owner`, null otherwise). The newest completed run of those accounts
 * that is the same computation (the same package, inputs digest, compute profile and
 * runtime, and the same seed when one is asked for) is `source`. A run that was itself a
 * reuse is never a source, so reuse always points at a run that ran.
 */
export async function findReusableRun(db: Db, callerId: string, releaseId: string | null, k: { package_sha256: string; inputs_sha256: string; compute_profile: string; runtime_sha256: string; seed?: number }): Promise<{ owner: string | null; source: Pick<RunRow, 'id' | 'account_id' | 'seed' | 'finished_at'> | undefined }> {
  // One account at a time: each is the first entry of an index ordered by finished_at
  // (migration 032), where an IN list would sort every identical run of both.
  const same = (account: string) => `SELECT id, account_id, seed, finished_at FROM runs
    WHERE account_id = ${account} AND status = 'completed' AND package_sha256 = :package AND inputs_sha256 = :inputs AND compute_profile = :profile
      AND runtime_sha256 = :runtime AND reused_from IS NULL${k.seed === undefined ? '' : ' AND seed = :seed'}
    ORDER BY finished_at DESC LIMIT 1`;
  const { rows } = await db.raw(`
    WITH owner AS (
      SELECT r.account_id FROM releases r JOIN labs l ON l.account_id = r.account_id AND l.name = r.name
       WHERE r.id = :release AND r.visibility = 'public' AND l.visibility = 'public' AND (l.content_settings->>'allow_reuse') = 'true' AND r.account_id <> :caller
    )
    SELECT (SELECT account_id FROM owner) AS owner, x.id, x.account_id, x.seed, x.finished_at
      FROM (SELECT 1) AS one LEFT JOIN LATERAL (
        SELECT * FROM ((${same(':caller')}) UNION ALL (${same('(SELECT account_id FROM owner)')})) AS both_accounts ORDER BY finished_at DESC LIMIT 1
      ) AS x ON true`, {
    release: releaseId, caller: callerId, package: k.package_sha256, inputs: k.inputs_sha256, profile: k.compute_profile, runtime: k.runtime_sha256, ...(k.seed === undefined ? {} : { seed: k.seed }),
  });
  const row = rows[0] as { owner: string | null; id: string | null; account_id: string; seed: number; finished_at: Date };
  return { owner: row.owner, source: row.id ? { id: row.id, account_id: row.account_id, seed: row.seed, finished_at: row.finished_at } : undefined };
}

/**
 * Undoes an acceptance whose workflow could not be started, leaving no trace (reservation,
 * plan use, events, row; silico_unaccept_run, migrations 019 and 043). False when its
 * execution began or it ended: a workflow has it.
 */
export async function unacceptRun(db: Db, runId: string): Promise<boolean> {
  const [row] = await runPrepared<{ undone: boolean }>(db, UNACCEPT_RUN, [runId]);
  return row!.undone;
}
const UNACCEPT_RUN = statement('unaccept-run', 'SELECT silico_unaccept_run($1) AS undone');

/** A run of this account, or undefined (another account's run is the same as none). */
export async function getRun(db: Db, id: string, accountId?: string): Promise<RunRow | undefined> {
  const [row] = accountId ? await runPrepared<RunRow>(db, GET_OWN_RUN, [id, accountId]) : await runPrepared<RunRow>(db, GET_RUN, [id]);
  return row;
}
const GET_RUN = statement('get-run', `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1`);
const GET_OWN_RUN = statement('get-own-run', `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1 AND account_id = $2`);

/** The outputs records of runs, by id (read a slice at a time: a study tells 100,000 at once). */
export async function runOutputs(db: Db, ids: string[]): Promise<Map<string, Record<string, unknown> | null>> {
  const out = new Map<string, Record<string, unknown> | null>();
  for (let i = 0; i < ids.length; i += 10_000) {
    const rows: Array<{ id: string; outputs: Record<string, unknown> | null }> = await db('runs').whereIn('id', ids.slice(i, i + 10_000)).select('id', 'outputs');
    for (const r of rows) out.set(r.id, r.outputs);
  }
  return out;
}

/** Newest first, filtered; keyset-paginated on (created_at, id). */
export async function listRuns(
  db: Db, accountId: string,
  f: { status?: string; capability?: string; experimentId?: string; metadata?: Record<string, string>; limit: number; after?: Array<string | number> | null },
): Promise<KeysetPage<RunRow>> {
  const q = db('runs').where({ account_id: accountId });
  if (f.status) q.andWhere({ status: f.status });
  if (f.experimentId) q.andWhere({ experiment_id: f.experimentId });
  if (f.capability) q.andWhere((w) => w.where('resolved_ref', f.capability!).orWhere('resolved_ref', 'like', `${f.capability!.replace(/[%_\\]/g, '\\$&')}@%`));
  if (f.metadata && Object.keys(f.metadata).length) q.andWhereRaw('metadata @> ?::jsonb', [JSON.stringify(f.metadata)]);
  q.select('*', db.raw(`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as sort_at`));
  return keysetPage<RunRow>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: `to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')` } });
}

/**
 * Appends an event with the next sequence number of its run, in one statement
 * (silico_append_run_event, migration 016): the counter on the run row is bumped by the
 * same transaction that inserts the event, so sequence numbers have no gaps and each
 * becomes visible only after the one before it.
 */
export async function appendEvent(db: Db, runId: string, type: string, message: string, data: Record<string, unknown> = {}): Promise<number> {
  const [row] = await runPrepared<{ seq: number }>(db, APPEND_EVENT, [runId, type, message, JSON.stringify(data)]);
  return row!.seq;
}
const APPEND_EVENT = statement('append-run-event', 'SELECT silico_append_run_event($1, $2, $3, $4::jsonb) AS seq');

export interface NewRunEvent { type: string; message: string; data: Record<string, unknown> }

/** Appends events to a run in their order, in one round trip (migration 036); returns the last seq. */
export async function appendEvents(db: Db, runId: string, events: NewRunEvent[]): Promise<number> {
  const [row] = await runPrepared<{ seq: number }>(db, APPEND_EVENTS, [runId, JSON.stringify(events)]);
  return row!.seq;
}
const APPEND_EVENTS = statement('append-run-events', 'SELECT silico_append_run_events($1, $2::jsonb) AS seq');

export async function listEvents(db: Db, runId: string, after: number, limit: number): Promise<RunEvent[]> {
  return runPrepared<RunEvent>(db, LIST_EVENTS, [runId, after, limit]);
}
const LIST_EVENTS = statement('list-run-events', 'SELECT seq, at, type, message, data FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3');

export interface ArtifactRow {
  id: string; run_id: string; role: string; file_name: string; content_type: string; format: string;
  size_bytes: number; sha256: string; public: boolean; created_at: Date;
}

export async function listArtifacts(db: Db, runId: string): Promise<ArtifactRow[]> {
  return db('run_artifacts').where({ run_id: runId }).orderBy('file_name');
}

export async function getArtifact(db: Db, runId: string, artifactId: string): Promise<ArtifactRow | undefined> {
  return db('run_artifacts').where({ run_id: runId, id: artifactId }).first();
}

/** Marks the moment execution began (compute is charged from there), once. */
export async function markRunStarted(db: Db, runId: string): Promise<void> {
  await runPrepared(db, MARK_STARTED, [runId]);
}
const MARK_STARTED = statement('mark-run-started', 'UPDATE runs SET started_at = now() WHERE id = $1 AND started_at IS NULL');

export async function setRunProgress(db: Db, runId: string, fraction: number): Promise<void> {
  await runPrepared(db, SET_PROGRESS, [runId, Math.min(1, Math.max(0, fraction))]);
}
const SET_PROGRESS = statement('set-run-progress', 'UPDATE runs SET progress = $2 WHERE id = $1');

/**
 * Records a running run's final output values (bounded: large ones are artifact
 * references), written by the execution activity so they never travel through a
 * workflow; the ending keeps them (silico_finish_run, migration 017).
 */
export async function setRunOutputs(db: Db, runId: string, outputs: Record<string, unknown>): Promise<void> {
  await db('runs').where({ id: runId }).whereIn('status', ['running', 'cancelling']).update({ outputs: JSON.stringify(outputs) });
}

export type NewArtifact = Omit<ArtifactRow, 'id' | 'run_id' | 'created_at'>;

/**
 * Records an artifact of a run once by file name, with the run's count and its
 * `artifact_stored` event (silico_record_artifact, migration 052), and returns its id and
 * whether this call recorded it (a retried activity finds the earlier row).
 */
export async function recordArtifact(db: Db, runId: string, id: string, a: NewArtifact): Promise<{ id: string; created: boolean }> {
  const [row] = await runPrepared<{ artifact_id: string; created: boolean }>(db, RECORD_ARTIFACT, [runId, id, JSON.stringify(a)]);
  return { id: row!.artifact_id, created: row!.created };
}
const RECORD_ARTIFACT = statement('record-artifact', 'SELECT artifact_id, created FROM silico_record_artifact($1, $2, $3::jsonb)');

/** Its execution has a live process now (the sweeper's evidence; see migration 035). */
export async function touchRunAlive(db: Db, runId: string): Promise<void> {
  await runPrepared(db, TOUCH_ALIVE, [runId]);
}
const TOUCH_ALIVE = statement('touch-run-alive', "UPDATE runs SET alive_at = now() WHERE id = $1 AND status IN ('running', 'cancelling')");

/** Runs not ended (of `runIds`, when given) whose execution had a live process once but none for `staleSeconds`. */
export async function staleRuns(db: Db, staleSeconds: number, runIds?: string[], limit = 200): Promise<Array<{ id: string; status: string; alive_at: Date; started_at: Date | null }>> {
  const q = db('runs').whereIn('status', ['running', 'cancelling'])
    .where('alive_at', '<', db.raw(`now() - make_interval(secs => ?)`, [staleSeconds]));
  if (runIds) q.whereIn('id', runIds);
  return q.orderBy('alive_at').limit(limit).select('id', 'status', 'alive_at', 'started_at');
}

/** A running run whose cancellation was requested: its ending is the workflow's to record. */
export async function markRunCancelling(db: Db, runId: string): Promise<void> {
  await db('runs').where({ id: runId, status: 'running' }).update({ status: 'cancelling' });
}

/** Of `runIds`, those not ended yet, in the order given. */
export async function openRunsOf(db: Db, runIds: string[]): Promise<string[]> {
  if (!runIds.length) return [];
  const open = new Set((await db('runs').whereIn('id', runIds).whereNotIn('status', TERMINAL).select('id')).map((r: { id: string }) => r.id));
  return runIds.filter((id) => open.has(id));
}

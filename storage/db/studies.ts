import type { Db } from './knex.ts';
import { TERMINAL, type RunStatus } from './runs.ts';
import { digestJson } from '../digest.ts';

/** One parameter set a study asked for (migration 040), with the run executing it. */
export interface StudyPoint {
  idx: number;
  batch: number;
  run_id: string;
  params: Record<string, number>;
  /** The optimizer's own attributes of this trial (CMA-ES keeps its state there). */
  attrs: Record<string, unknown>;
  /** What the run told: the study's numbers for it (loss and fitted values, or output summaries); null until told. */
  outcome: Record<string, unknown> | null;
  status: RunStatus;
}

/** The study's runs (`experiment_runs as x`) not yet given a parameter set. */
const withoutPoint = <Q extends { whereNotExists(sub: unknown): Q }>(db: Db, q: Q): Q =>
  q.whereNotExists(db('experiment_points as p').whereRaw('p.run_id = x.run_id').select(db.raw('1')));

/** The study's attached runs still queued and waiting for a parameter set, in start order. */
const waitingRuns = (db: Db, experimentId: string) => withoutPoint(db, db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id')
  .where({ 'x.experiment_id': experimentId, 'r.status': 'queued' }).whereNull('x.detached_at'));

/** Every point of a study in the order asked, with its run's status. */
export async function studyPoints(db: Db, experimentId: string): Promise<StudyPoint[]> {
  return db('experiment_points as p').join('runs as r', 'r.id', 'p.run_id').where('p.experiment_id', experimentId).orderBy('p.idx')
    .select('p.idx', 'p.batch', 'p.run_id', 'p.params', 'p.attrs', 'p.outcome', 'r.status');
}

/**
 * Points one statement of `assignBatch` or `tellPoints` writes: the same memory per
 * statement whatever the study's size. Its Postgres backend's own memory peaked at about
 * 70 MiB with 10,000 a statement and 16 MiB with 2,000, in the same time.
 */
const POINT_SLICE = 2_000;

/** Pages of points in the order asked: each page the next `POINT_SLICE` after the last one's index. */
async function* pagesByIdx<T extends { idx: number }>(page: (after: number) => Promise<T[]>): AsyncGenerator<T[]> {
  for (let after = -1; ;) {
    const rows = await page(after);
    if (!rows.length) return;
    yield rows;
    after = rows.at(-1)!.idx;
  }
}

/** A batch's points not yet told, POINT_SLICE at a time in the order asked: what a tell reads of each. */
export function untoldPointPages(db: Db, experimentId: string, batch: number): AsyncGenerator<Array<Pick<StudyPoint, 'idx' | 'run_id' | 'status'>>> {
  return pagesByIdx((after) => db('experiment_points as p').join('runs as r', 'r.id', 'p.run_id')
    .where({ 'p.experiment_id': experimentId, 'p.batch': batch }).whereNull('p.outcome').andWhere('p.idx', '>', after)
    .orderBy('p.idx').limit(POINT_SLICE).select('p.idx', 'p.run_id', 'r.status'));
}

/** Every point of a study in the order asked, POINT_SLICE at a time: its set and what it told, without its run or attributes. */
export function pointOutcomePages(db: Db, experimentId: string): AsyncGenerator<Array<Pick<StudyPoint, 'idx' | 'params' | 'outcome'>>> {
  return pagesByIdx((after) => db('experiment_points').where('experiment_id', experimentId).andWhere('idx', '>', after)
    .orderBy('idx').limit(POINT_SLICE).select('idx', 'params', 'outcome'));
}

/** The run of the study's first point, in the order asked, that completed. */
export async function firstCompletedRun(db: Db, experimentId: string): Promise<string | undefined> {
  const row = await db('experiment_points as p').join('runs as r', 'r.id', 'p.run_id').where({ 'p.experiment_id': experimentId, 'r.status': 'completed' })
    .orderBy('p.idx').first('p.run_id');
  return row?.run_id;
}

/** Whether the study has given any parameter set. */
export async function hasPoints(db: Db, experimentId: string): Promise<boolean> {
  return Boolean(await db('experiment_points').where('experiment_id', experimentId).first(db.raw('1')));
}

/**
 * Gives a batch its parameter sets, once: each set goes to the next of the study's runs
 * still waiting for one (queued, in start order), whose inputs become the study's fixed
 * inputs with the set over them. When the batch was given before (a retried activity),
 * that assignment stands and is returned; a study whose waiting runs ran out (closed, or
 * its budget spent) assigns fewer, or none.
 */
export async function assignBatch(
  db: Db, experimentId: string, batch: number, asked: Array<{ params: Record<string, number>; attrs: Record<string, unknown> }>, baseInputs: Record<string, unknown>,
): Promise<Array<{ idx: number; run_id: string }>> {
  return db.transaction(async (trx) => {
    // One assignment of the study at a time (a retried activity finds its batch given). Not
    // the study's row: a run's change locks the run, then touches that row, so holding the
    // row while the batch's runs are updated deadlocked with a run cancelled meanwhile.
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`study-points:${experimentId}`]);
    const given = await trx('experiment_points').where({ experiment_id: experimentId, batch }).orderBy('idx').select('idx', 'run_id');
    if (given.length) return given;
    const waiting: string[] = await waitingRuns(trx, experimentId).orderBy('x.position').limit(asked.length).pluck('x.run_id');
    const first = Number((await trx('experiment_points').where({ experiment_id: experimentId }).max<{ max: number | null }>('idx as max').first())?.max ?? -1) + 1;
    // The batch's points written and its runs given their inputs POINT_SLICE at a time (a
    // sensitivity study's batch is its whole sample): a statement's memory, here and in its
    // Postgres backend, is then the same whatever the study's size.
    for (let at = 0; at < waiting.length; at += POINT_SLICE) {
      const ids = waiting.slice(at, at + POINT_SLICE);
      const inputs = ids.map((_, i) => ({ ...baseInputs, ...asked[at + i]!.params }));
      await trx.raw(`UPDATE runs AS r SET inputs = u.inputs, inputs_sha256 = u.sha256, metadata = r.metadata || u.metadata
        FROM unnest(?::uuid[], ?::jsonb[], ?::text[], ?::jsonb[]) AS u(id, inputs, sha256, metadata) WHERE r.id = u.id AND r.status = 'queued'`, [
        ids, inputs.map((x) => JSON.stringify(x)), inputs.map((x) => digestJson(x)),
        ids.map((_, i) => JSON.stringify({ study_point: String(first + at + i), study_batch: String(batch) })),
      ]);
      await trx.batchInsert('experiment_points', ids.map((runId, i) => ({
        experiment_id: experimentId, idx: first + at + i, batch, run_id: runId, params: JSON.stringify(asked[at + i]!.params), attrs: JSON.stringify(asked[at + i]!.attrs),
      })), 1000);
    }
    return waiting.map((runId, i) => ({ idx: first + i, run_id: runId }));
  });
}

/** Records what each run of a batch told (idempotent: a told point keeps its first outcome), POINT_SLICE points a statement. */
export async function tellPoints(db: Db, experimentId: string, told: Array<{ idx: number; outcome: Record<string, unknown> }>): Promise<void> {
  for (let at = 0; at < told.length; at += POINT_SLICE) {
    const slice = told.slice(at, at + POINT_SLICE);
    await db.raw(`UPDATE experiment_points AS p SET outcome = u.outcome, told_at = now()
      FROM unnest(?::integer[], ?::jsonb[]) AS u(idx, outcome) WHERE p.experiment_id = ? AND p.idx = u.idx AND p.told_at IS NULL`, [
      slice.map((t) => t.idx), slice.map((t) => JSON.stringify(t.outcome)), experimentId,
    ]);
  }
}

/** How many of the study's runs still wait for a parameter set. */
export async function runsAwaitingPoints(db: Db, experimentId: string): Promise<number> {
  const row = await waitingRuns(db, experimentId).count<{ n: string }>('* as n').first();
  return Number(row?.n ?? 0);
}

/** A page of a batch's run ids in the order they were given their sets, and how many the batch has: 0 when it was not asked yet. */
export async function batchRunPage(db: Db, experimentId: string, batch: number, page: { offset: number; limit: number }): Promise<{ runIds: string[]; runs: number }> {
  const of = () => db('experiment_points').where({ experiment_id: experimentId, batch });
  const [counted, runIds] = await Promise.all([
    of().count<{ n: string }>('* as n').first(),
    of().orderBy('idx').offset(page.offset).limit(page.limit).pluck('run_id') as Promise<string[]>,
  ]);
  return { runIds, runs: Number(counted?.n ?? 0) };
}

/** The run ids of a batch in the order they were given their sets; none when it was not asked yet. */
export async function batchRunIds(db: Db, experimentId: string, batch: number): Promise<string[]> {
  return db('experiment_points').where({ experiment_id: experimentId, batch }).orderBy('idx').pluck('run_id');
}

/** How many of the runs given a parameter set have ended, completed or not. */
export async function pointsEnded(db: Db, experimentId: string): Promise<{ completed: number; notCompleted: number }> {
  const row = await db('experiment_points as p').join('runs as r', 'r.id', 'p.run_id').where('p.experiment_id', experimentId).first(
    db.raw(`count(*) FILTER (WHERE r.status = 'completed')::integer AS completed`),
    db.raw(`count(*) FILTER (WHERE r.status IN (?) AND r.status <> 'completed')::integer AS not_completed`, [[...TERMINAL]]),
  );
  return { completed: row.completed, notCompleted: row.not_completed };
}

export async function setStudyAnalysis(db: Db, experimentId: string, analysis: Record<string, unknown>): Promise<void> {
  await db('experiments').where({ id: experimentId }).update({ analysis: JSON.stringify(analysis), updated_at: db.fn.now() });
}


/** The point a study's run executes (its parameter set and the optimizer's attributes), or undefined. */
export async function pointOfRun(db: Db, runId: string): Promise<Pick<StudyPoint, 'idx' | 'batch' | 'params' | 'attrs'> | undefined> {
  return db('experiment_points').where({ run_id: runId }).first('idx', 'batch', 'params', 'attrs');
}

/** The data of a run's `progress` events of one phase, in order: what an execution left for the one after it. */
export async function progressOfPhase(db: Db, runId: string, phase: string): Promise<Array<Record<string, unknown>>> {
  const rows: Array<{ data: Record<string, unknown> }> = await db('run_events').where({ run_id: runId, type: 'progress' }).whereRaw(`data->>'phase' = ?`, [phase]).orderBy('seq').select('data');
  return rows.map((r) => r.data);
}

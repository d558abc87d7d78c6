import type { createDb } from '../../storage/db/knex.ts';
import { median } from './stats.ts';

type Db = ReturnType<typeof createDb>;

/**
 * Where a study's wall time went, batch by batch, from its runs' own timestamps: how long
 * each batch's runs took from the first slot taken to the last run settled, and the pause
 * from there to the next batch's first slot (telling, asking, starting its runs); then the
 * end, from the last run settled to the study completed (the analysis and its files).
 */
export async function studyTimeline(db: Db, experimentId: string): Promise<string> {
  const rows: Array<{ batch: number; running: Date; ended: Date; told: Date }> = await db('experiment_points as p').join('runs as r', 'r.id', 'p.run_id').where('p.experiment_id', experimentId)
    .select('p.batch', 'r.finished_at as ended', 'p.told_at as told', db.raw(`(SELECT e.at FROM run_events e WHERE e.run_id = r.id AND e.type = 'state_changed' AND e.data->>'status' = 'running' ORDER BY e.seq LIMIT 1) AS running`));
  const e = await db('experiments').where({ id: experimentId }).first('created_at', 'completed_at');
  const batches = [...new Set(rows.map((r) => r.batch))].sort((a, b) => a - b).map((b) => {
    const of = rows.filter((r) => r.batch === b);
    return { first: Math.min(...of.map((r) => r.running.getTime())), last: Math.max(...of.map((r) => r.ended.getTime())), told: Math.max(...of.map((r) => r.told.getTime())) };
  });
  const spans = batches.map((b) => b.last - b.first);
  const pauses = batches.slice(1).map((b, i) => b.first - batches[i]!.last);
  // Of each pause: until the batch was told, then until the next batch's first slot (asking, starting its runs).
  const tells = batches.slice(0, -1).map((b) => b.told - b.last);
  const asks = batches.slice(1).map((b, i) => b.first - batches[i]!.told);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return `first slot +${batches[0]!.first - e.created_at.getTime()} ms; batches ${(sum(spans) / 1000).toFixed(1)} s (median ${median(spans)} ms); `
    + `pauses between batches ${(sum(pauses) / 1000).toFixed(1)} s (median ${median(pauses)} ms: told after ${median(tells)} ms, next slot ${median(asks)} ms later); `
    + `end ${e.completed_at.getTime() - batches.at(-1)!.last} ms`;
}

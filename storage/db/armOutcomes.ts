import type { Db } from './knex.ts';
import { TERMINAL } from './runs.ts';

/** One arm's numbers for one output over its completed attached runs, as Postgres aggregates them. */
export interface OutputAggregate { n: number; mean: number; stddev: number | null; min: number; max: number }

/**
 * What a study's comparison is computed from, read with aggregates so its size does not
 * depend on how many runs the study has: per arm its completed attached runs and, per
 * numeric output it declares, n, mean, sample standard deviation, min and max; and, for a
 * study of exactly two arms (at most 10 replicates each), every value, for Welch's test.
 */
export interface ArmOutcomes {
  completed: number[];
  aggregates: Array<Map<string, OutputAggregate>>;
  values: Array<Map<string, number[]>> | null;
}

/** The numeric outputs of completed attached runs of a study, one row per run and output (`o.key`, `o.v`). */
function numericOutputs(db: Db, experimentId: string, outputs: string[]) {
  return db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id')
    .joinRaw(`CROSS JOIN LATERAL (SELECT key, value::text::float8 AS v FROM jsonb_each(r.outputs) WHERE jsonb_typeof(value) = 'number' AND key = ANY(?)) AS o`, [outputs])
    .where({ 'x.experiment_id': experimentId, 'r.status': 'completed' }).whereNull('x.detached_at');
}

export async function armOutcomes(db: Db, experimentId: string, arms: Array<{ scalar_outputs: string[] }>): Promise<ArmOutcomes> {
  const outputs = [...new Set(arms.flatMap((a) => a.scalar_outputs))];
  const [counts, rows, values] = await Promise.all([
    db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id').where({ 'x.experiment_id': experimentId, 'r.status': 'completed' }).whereNull('x.detached_at')
      .groupBy('x.arm_index').select('x.arm_index', db.raw('count(*)::integer AS n')) as Promise<Array<{ arm_index: number; n: number }>>,
    numericOutputs(db, experimentId, outputs).groupBy('x.arm_index', 'o.key')
      .select('x.arm_index', 'o.key', db.raw('count(*)::integer AS n, avg(o.v) AS mean, stddev_samp(o.v) AS stddev, min(o.v) AS min, max(o.v) AS max')) as Promise<Array<OutputAggregate & { arm_index: number; key: string }>>,
    arms.length === 2
      ? numericOutputs(db, experimentId, outputs).orderBy('x.position').select('x.arm_index', 'o.key', 'o.v') as Promise<Array<{ arm_index: number; key: string; v: number }>>
      : Promise.resolve(null),
  ]);
  const completed = arms.map((_, i) => counts.find((c) => c.arm_index === i)?.n ?? 0);
  const aggregates = arms.map(() => new Map<string, OutputAggregate>());
  for (const r of rows) {
    if (!arms[r.arm_index]!.scalar_outputs.includes(r.key)) continue;
    aggregates[r.arm_index]!.set(r.key, { n: r.n, mean: r.mean, stddev: r.n > 1 ? r.stddev : null, min: r.min, max: r.max });
  }
  let byArm: ArmOutcomes['values'] = null;
  if (values) {
    byArm = arms.map(() => new Map<string, number[]>());
    for (const v of values) {
      if (!arms[v.arm_index]!.scalar_outputs.includes(v.key)) continue;
      const list = byArm[v.arm_index]!.get(v.key) ?? [];
      list.push(v.v);
      byArm[v.arm_index]!.set(v.key, list);
    }
  }
  return { completed, aggregates, values: byArm };
}

/** A study's outcomes before any run completed: what `armOutcomes` reads of a study just accepted. */
export function noOutcomes(arms: unknown[]): ArmOutcomes {
  return { completed: arms.map(() => 0), aggregates: arms.map(() => new Map()), values: arms.length === 2 ? arms.map(() => new Map()) : null };
}

/** What a study's runs have been charged so far (every run it made, detached ones included), in micro-dollars. */
export async function settledMicros(db: Db, experimentId: string): Promise<number> {
  const row = await db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id').where('x.experiment_id', experimentId).whereIn('r.status', TERMINAL)
    .first(db.raw('coalesce(sum(r.settled_micros), 0)::bigint AS micros')) as { micros: string } | undefined;
  return Number(row?.micros ?? 0);
}

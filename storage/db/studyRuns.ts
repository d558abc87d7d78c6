import type { Knex } from 'knex';
import type { Db } from './knex.ts';
import type { RunStatus } from './runs.ts';
import type { KeysetPage } from './pagination.ts';

/** One of a study's runs as its listing shows it: where it stands, the set it was given and what it told. */
export interface StudyRunRow {
  run_id: string;
  position: number;
  arm_index: number;
  replicate: number;
  status: RunStatus;
  seed: number;
  /** The batch that gave it its parameter set; null until given one (and for a comparison's runs). */
  batch: number | null;
  params: Record<string, number> | null;
  /** What it told the study (output summaries, or loss and fitted values); null until told. */
  outcome: Record<string, unknown> | null;
  /** The value it is sorted by; null when it has none (yet). */
  sort_value: number | null;
}

/** What a study's runs are sorted by: start order, a parameter of their set, or a number they told (an output's key, or `loss`). */
export type StudyRunSort = { by: 'position' } | { by: 'param'; name: string } | { by: 'outcome'; key: string };

/** A JSON member as a number, or null when it is missing or not a number (a failed run tells `{failed: ...}`). */
const numberAt = (column: string) => `CASE WHEN jsonb_typeof(${column} -> ?) = 'number' THEN (${column} ->> ?)::float8 END`;

function sortKey(sort: StudyRunSort): { sql: string; bindings: string[] } {
  if (sort.by === 'position') return { sql: 'x.position::float8', bindings: [] };
  const name = sort.by === 'param' ? sort.name : sort.key;
  return { sql: numberAt(sort.by === 'param' ? 'p.params' : 'p.outcome'), bindings: [name, name] };
}

function studyRunsQuery(db: Db | Knex.Transaction, experimentId: string, sort: StudyRunSort, status?: RunStatus) {
  const key = sortKey(sort);
  const q = db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id').leftJoin('experiment_points as p', 'p.run_id', 'x.run_id')
    .where('x.experiment_id', experimentId).whereNull('x.detached_at')
    .select('x.run_id', 'x.position', 'x.arm_index', 'x.replicate', 'r.status', 'r.seed', 'p.batch', 'p.params', 'p.outcome', db.raw(`${key.sql} AS sort_value`, key.bindings));
  if (status) q.andWhere('r.status', status);
  return { q, key };
}

/**
 * A page of a study's runs (detached ones are no longer the study's), sorted by `sort`
 * with runs that have no value for it last, ties in start order; `after` is the last
 * row's [sort value, position]. Keyset paging, so a page does not shift as runs end.
 */
export async function listStudyRuns(db: Db, experimentId: string, opts: {
  sort: StudyRunSort; direction: 'asc' | 'desc'; status?: RunStatus; limit: number; after?: [number | null, number] | null;
}): Promise<KeysetPage<StudyRunRow>> {
  const { q, key } = studyRunsQuery(db, experimentId, opts.sort, opts.status);
  if (opts.after) {
    const [value, position] = opts.after;
    if (value === null) q.andWhereRaw(`${key.sql} IS NULL AND x.position > ?`, [...key.bindings, position]);
    else {
      const beyond = opts.direction === 'asc' ? '>' : '<';
      q.andWhereRaw(`(${key.sql} ${beyond} ? OR (${key.sql} = ? AND x.position > ?) OR ${key.sql} IS NULL)`, [...key.bindings, value, ...key.bindings, value, position, ...key.bindings]);
    }
  }
  q.orderByRaw(`${key.sql} ${opts.direction} NULLS LAST, x.position ASC`, key.bindings);
  const rows = (await q.limit(opts.limit + 1)) as StudyRunRow[];
  const hasMore = rows.length > opts.limit;
  const page = hasMore ? rows.slice(0, opts.limit) : rows;
  const last = page.at(-1);
  return { rows: page, hasMore, nextAfter: hasMore && last ? [last.sort_value, last.position] : null };
}

/** A study's runs in start order, `size` at a time (keyset on their place): a 100,000-run study is never held whole. */
export async function* studyRunPages(db: Db, experimentId: string, size = 5000): AsyncGenerator<StudyRunRow[]> {
  for (let after = 0; ;) {
    const { q } = studyRunsQuery(db, experimentId, { by: 'position' });
    const rows = (await q.andWhere('x.position', '>', after).orderBy('x.position').limit(size)) as StudyRunRow[];
    if (rows.length) yield rows;
    if (rows.length < size) return;
    after = rows.at(-1)!.position;
  }
}

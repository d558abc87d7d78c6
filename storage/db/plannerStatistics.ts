import type { Db } from './knex.ts';

/**
 * Gathers planner statistics for every table of the schema that has rows and has never had
 * any statistics, and returns their names. Autovacuum analyses a table only once 50 rows
 * and a tenth of it have changed, so the small tables of a fresh database (the local
 * stack's) would never have statistics, and the plans a long-lived connection builds and
 * caches on them are then a guess it keeps: measured on bench:api, `GET /account`'s
 * statement took 0.143 ms of execution on the api's connections against 0.055 once its
 * tables were analysed.
 *
 * An empty table is left unanalysed: until its first analysis the planner takes a table to
 * be at least ten pages, as one about to be loaded. Analysed while empty, a table is
 * planned by its size at the time, and the plans cached then (PL/pgSQL's statements,
 * prepared statements, foreign-key checks) scan it whole until autovacuum analyses it
 * again: on a fresh bench stack `runs` was read whole 78,000 times (596 million rows) in
 * its first 75 seconds, and a 20,000-run study's acceptance timed out.
 */
export async function analyseNeverAnalysed(db: Db): Promise<string[]> {
  const { rows: never } = await db.raw<{ rows: { name: string }[] }>(`
    SELECT format('%I.%I', schemaname, relname) AS name FROM pg_stat_user_tables
     WHERE schemaname = current_schema() AND last_analyze IS NULL AND last_autoanalyze IS NULL
     ORDER BY relname`);
  if (!never.length) return [];
  // Whether each has a row, read from the table itself: the statistics' row counts lag.
  const { rows } = await db.raw<{ rows: { name: string }[] }>(
    never.map((t, i) => `SELECT ${i} AS i, ?::text AS name WHERE EXISTS (SELECT 1 FROM ${t.name})`).join(' UNION ALL ') + ' ORDER BY i',
    never.map((t) => t.name),
  );
  if (rows.length) await db.raw(`ANALYZE ${rows.map((r) => r.name).join(', ')}`);
  return rows.map((r) => r.name);
}

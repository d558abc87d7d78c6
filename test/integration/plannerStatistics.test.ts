import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import knexFactory from 'knex';
import { analyseNeverAnalysed } from '../../storage/db/plannerStatistics.ts';

// The set-up's statistics (storage/db/plannerStatistics.ts), in a schema of this test's own
// on real Postgres: a table with rows is analysed, an empty one is left to the planner's
// "about to be loaded" assumption, so a lookup cached while it was empty still uses its
// index once it has grown.

const schema = `planner_${process.pid}_${Date.now()}`;
const db = knexFactory({ client: 'pg', connection: process.env.DATABASE_URL!, searchPath: [schema], pool: { min: 1, max: 1 } });

after(async () => {
  await db.raw(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await db.destroy();
});

test('analyses the tables that have rows and leaves the empty ones; a lookup planned while a table was empty keeps its index as it grows', { timeout: 60_000 }, async () => {
  await db.raw(`CREATE SCHEMA ${schema}`);
  await db.raw('CREATE TABLE filled (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), pad text)');
  await db.raw('CREATE TABLE grows (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), pad text)');
  await db.raw("INSERT INTO filled (pad) VALUES ('a'), ('b')");

  assert.deepEqual(await analyseNeverAnalysed(db), [`${schema}.filled`]);
  const analysed = await db.raw<{ rows: Array<{ relname: string; analysed: boolean }> }>(
    'SELECT relname, last_analyze IS NOT NULL AS analysed FROM pg_stat_user_tables WHERE schemaname = ? ORDER BY relname', [schema]);
  assert.deepEqual(analysed.rows, [{ relname: 'filled', analysed: true }, { relname: 'grows', analysed: false }]);

  // A prepared lookup (one connection: the pool holds one) takes its generic plan after five
  // executions, while the table holds one row; then the table grows with no analysis between.
  await db.raw("INSERT INTO grows (pad) VALUES ('first')");
  await db.raw('PREPARE lookup(uuid) AS SELECT pad FROM grows WHERE id = $1');
  for (let i = 0; i < 7; i++) await db.raw('EXECUTE lookup(gen_random_uuid())');
  await db.raw("INSERT INTO grows (pad) SELECT repeat('x', 200) FROM generate_series(1, 20000)");
  const plan = await db.raw<{ rows: Array<{ 'QUERY PLAN': string }> }>('EXPLAIN EXECUTE lookup(gen_random_uuid())');
  const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
  assert.match(text, /Index (Only )?Scan using grows_pkey/, text);
  await db.raw('DEALLOCATE lookup');
});

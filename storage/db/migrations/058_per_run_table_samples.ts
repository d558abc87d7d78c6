import type { Knex } from 'knex';

/**
 * The tables that take a row or more for every run are analysed from a sample of
 * 300 × PER_RUN_STATISTICS = 7,500 rows instead of 30,000 (the default target's 100).
 *
 * ANALYZE holds its whole sample in memory, a sampled row rounded up to its allocation's
 * power of two: a `runs` or `webhook_events` row of 500–700 bytes takes 1 KB, so the
 * autovacuum worker analysing either held 34–37 MiB at 100,000 runs and about a third of
 * that at 10,000 (probed on the dev stack), Postgres's largest growth with a study's size.
 * At this target it holds about 10 MiB, reached at 7,500 rows and never passed.
 *
 * These tables are read by key through their indexes (a run, a study's runs, an account's
 * newest); their statistics only choose between an index and a scan, which 25 buckets
 * choose as well as 100. A column added to one of them later takes the default target
 * unless it is given this one: storage's test of these tables says so.
 */
export const PER_RUN_TABLES = ['runs', 'run_events', 'experiment_runs', 'experiment_points', 'webhook_events', 'ledger_txns', 'ledger_entries'];
export const PER_RUN_STATISTICS = 25;

const setTarget = (target: number) => `
  DO $$
  DECLARE
    t text;
    c text;
  BEGIN
    FOREACH t IN ARRAY ARRAY['${PER_RUN_TABLES.join("', '")}'] LOOP
      FOR c IN SELECT attname FROM pg_attribute WHERE attrelid = t::regclass AND attnum > 0 AND NOT attisdropped LOOP
        EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET STATISTICS ${target}', t, c);
      END LOOP;
    END LOOP;
  END $$;
`;

export async function up(k: Knex): Promise<void> {
  await k.raw(setTarget(PER_RUN_STATISTICS));
}

export async function down(k: Knex): Promise<void> {
  await k.raw(setTarget(-1));
}

import type { Knex } from 'knex';

/**
 * When a run's execution last had a live process (its lab, or its environment's build),
 * touched by the executing worker every few seconds; the sweeper ends runs whose
 * execution has had none for a minute. Indexed only among runs that can still end.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    ALTER TABLE runs ADD COLUMN alive_at timestamptz;
    CREATE INDEX runs_alive_at_open ON runs (alive_at) WHERE status IN ('running', 'cancelling');
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP INDEX IF EXISTS runs_alive_at_open;
    ALTER TABLE runs DROP COLUMN IF EXISTS alive_at;
  `);
}

import type { Knex } from 'knex';

/**
 * Spend caps: an account and each of its keys may carry a monthly cap (over the calendar
 * month, UTC) and a per-run cap, in micro-dollars. A run records the key that accepted it
 * (its spend counts against that key too) and, when a cap is lower than its maximum
 * price, the cap it runs under: its reservation is that cap, and its execution stops
 * when its metered cost reaches it.
 */
export async function up(k: Knex): Promise<void> {
  for (const table of ['accounts', 'api_keys']) {
    await k.schema.alterTable(table, (t) => {
      t.bigInteger('monthly_cap_micros');
      t.bigInteger('run_cap_micros');
    });
  }
  await k.schema.alterTable('runs', (t) => {
    t.text('key_id');
    t.bigInteger('cap_micros');
  });
  await k.raw(`CREATE INDEX runs_key_month ON runs (key_id, created_at) WHERE key_id IS NOT NULL`);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP INDEX IF EXISTS runs_key_month');
  await k.schema.alterTable('runs', (t) => {
    t.dropColumn('cap_micros');
    t.dropColumn('key_id');
  });
  for (const table of ['accounts', 'api_keys']) {
    await k.schema.alterTable(table, (t) => {
      t.dropColumn('run_cap_micros');
      t.dropColumn('monthly_cap_micros');
    });
  }
}

import type { Knex } from 'knex';

/**
 * A counter's outstanding leases (`createCounters`): how many processes hold positions
 * of its window drawn ahead and not yet given back, and until when the last of them
 * lasts. A request that finds the counter past its limit while another process still
 * holds a lease waits for it to end instead of being refused early.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('rate_limits', (t) => {
    t.integer('leases').notNullable().defaultTo(0);
    t.bigInteger('lease_until').notNullable().defaultTo(0);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('rate_limits', (t) => {
    t.dropColumn('leases');
    t.dropColumn('lease_until');
  });
}

import type { Knex } from 'knex';

/**
 * Rate-limit counters are rewritten on every request and worth nothing after a crash
 * (a reset counter only forgives a minute, or part of a day), so they skip the WAL:
 * an unlogged table makes each count a cheap in-memory update, not a logged write.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw('ALTER TABLE rate_limits SET UNLOGGED');
}

export async function down(k: Knex): Promise<void> {
  await k.raw('ALTER TABLE rate_limits SET LOGGED');
}

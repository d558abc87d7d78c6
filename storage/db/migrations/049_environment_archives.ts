import type { Knex } from 'knex';

/**
 * The environment archives shared through the object store (activities/environments/shared.ts),
 * one row per lock and layout: when a worker last published, took or ran it, which the
 * hourly maintenance reads to remove archives unused past their retention.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('environment_archives', (t) => {
    t.text('lock_sha256').notNullable();
    t.text('layout').notNullable();
    t.timestamp('used_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.primary(['lock_sha256', 'layout']);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTableIfExists('environment_archives');
}

import type { Knex } from 'knex';

/** What the lab runtime environment cannot satisfy for a release (checked when packed). */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('releases', (t) => {
    t.jsonb('runtime_problems').notNullable().defaultTo('[]');
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('releases', (t) => t.dropColumn('runtime_problems'));
}

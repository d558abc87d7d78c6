import type { Knex } from 'knex';

/** A release's archive entries with their sha256 (for inspecting without unpacking). */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('releases', (t) => {
    t.jsonb('files').notNullable().defaultTo('[]');
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('releases', (t) => t.dropColumn('files'));
}

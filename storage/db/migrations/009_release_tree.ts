import type { Knex } from 'knex';

/** The source tree a release was packed from (path → sha256, size), so it can be forked. */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('releases', (t) => {
    t.jsonb('tree').notNullable().defaultTo('{}');
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('releases', (t) => t.dropColumn('tree'));
}

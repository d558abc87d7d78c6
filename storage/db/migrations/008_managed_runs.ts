import type { Knex } from 'knex';

/** Managed runs execute a private workspace revision instead of a release. */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('runs', (t) => {
    t.uuid('workspace_id').references('workspaces.id');
    t.uuid('revision_id').references('revisions.id');
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('runs', (t) => {
    t.dropColumn('revision_id');
    t.dropColumn('workspace_id');
  });
}

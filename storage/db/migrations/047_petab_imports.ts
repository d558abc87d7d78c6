import type { Knex } from 'knex';

/**
 * A PEtab problem imported: the three things its one approved plan made (the lab's
 * workspace and first revision, the dataset of its measurements, and the calibration
 * design its parameter table gives), the digests of the problem's files as they came, the
 * library versions that read them, and its value at the nominal parameters.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('petab_imports', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.uuid('plan_id').notNullable().unique();
    t.text('title').notNullable();
    t.uuid('workspace_id').notNullable().references('workspaces.id');
    t.uuid('revision_id').notNullable().references('revisions.id');
    t.text('lab_id').notNullable().references('labs.id');
    t.text('dataset_id').notNullable().references('datasets.id');
    // The problem's YAML, as a path of the lab's tree.
    t.text('yaml_path').notNullable();
    t.jsonb('design').notNullable();
    t.jsonb('files').notNullable();
    t.jsonb('versions').notNullable();
    t.jsonb('nominal').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.index(['account_id', 'created_at', 'id']);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTable('petab_imports');
}

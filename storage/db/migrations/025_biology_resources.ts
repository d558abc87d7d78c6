import type { Knex } from 'knex';

/**
 * Biology resources: exact records fetched from an approved source, their bytes in the
 * object store by sha256. A fetch records all its records at once (`fetch_id`, one row per
 * record: a retried step writes nothing twice). Pinning one into a workspace revision
 * (`file_put` by `resource_id`) records which resource stands behind which path.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('biology_resources', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('fetch_id').notNullable();
    t.text('source_id').notNullable();
    t.text('record_id').notNullable();
    t.text('format').notNullable();
    t.text('version');
    t.text('media_type').notNullable();
    t.text('url').notNullable();
    t.text('sha256').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.timestamp('retrieved_at', { useTz: true }).notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.unique(['fetch_id', 'record_id']);
    t.index(['account_id', 'created_at']);
  });
  await k.schema.createTable('revision_resources', (t) => {
    t.uuid('revision_id').notNullable().references('revisions.id');
    t.text('path').notNullable();
    t.text('resource_id').notNullable().references('biology_resources.id');
    t.primary(['revision_id', 'path']);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTable('revision_resources');
  await k.schema.dropTable('biology_resources');
}

import type { Knex } from 'knex';

/** Private input files: uploaded, or copied from a run's artifact (keeping that origin). */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('files', (t) => {
    t.uuid('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('name').notNullable();
    t.text('format').notNullable();
    t.text('content_type').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.text('sha256').notNullable();
    t.jsonb('origin');
    t.text('origin_key');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.index(['account_id', 'created_at']);
    // A copy from a run is made once per (account, run, artifact): a retry finds it.
    t.unique(['account_id', 'origin_key']);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTableIfExists('files');
}

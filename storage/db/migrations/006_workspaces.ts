import type { Knex } from 'knex';

/** Labs (editable, owned), their private workspaces and immutable revisions. */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('labs', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('name').notNullable();
    t.text('title').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.text('visibility').notNullable().defaultTo('private').checkIn(['private', 'team', 'public']);
    t.jsonb('content_settings').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.unique(['account_id', 'name']);
  });
  await k.schema.createTable('workspaces', (t) => {
    t.uuid('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('lab_id').notNullable().references('labs.id');
    t.text('title').notNullable();
    t.uuid('head_revision_id');
    t.jsonb('origin');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.index(['account_id', 'updated_at']);
  });
  await k.schema.createTable('revisions', (t) => {
    t.uuid('id').primary();
    t.uuid('workspace_id').notNullable().references('workspaces.id');
    t.uuid('parent_revision_id').references('revisions.id');
    t.integer('number').notNullable();
    t.jsonb('tree').notNullable();
    t.text('tree_sha256').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.uuid('plan_id').references('plans.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.unique(['workspace_id', 'number']);
  });
}

export async function down(k: Knex): Promise<void> {
  for (const t of ['revisions', 'workspaces', 'labs']) await k.schema.dropTableIfExists(t);
}

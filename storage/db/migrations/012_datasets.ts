import type { Knex } from 'knex';

/** Immutable dataset versions: a manifest of retained file identities and split membership. */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('datasets', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('name').notNullable();
    t.integer('version').notNullable();
    t.text('status').notNullable().checkIn(['registering', 'registered', 'failed']);
    t.jsonb('manifest').notNullable();
    t.text('manifest_sha256').notNullable();
    t.jsonb('problems').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('registered_at', { useTz: true });
    t.unique(['account_id', 'name', 'version']);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTableIfExists('datasets');
}

import type { Knex } from 'knex';

/**
 * Workflow grants (docs/contract/gaps.md, Publication): an operator's standing approval for an
 * automated pipeline of one account to publish plans of one lab within a version range,
 * instead of a per-plan digest approval. Each publication records how it was approved.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('publication_grants', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('lab_name').notNullable();
    t.text('version_range').notNullable().defaultTo('*');
    t.text('note').notNullable().defaultTo('');
    t.timestamp('expires_at', { useTz: true });
    t.timestamp('revoked_at', { useTz: true });
    t.integer('uses').notNullable().defaultTo(0);
    t.timestamp('last_used_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.index(['account_id']);
  });
  await k.schema.alterTable('publications', (t) => {
    t.jsonb('approval').notNullable().defaultTo(JSON.stringify({ kind: 'plan_digest' }));
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('publications', (t) => t.dropColumn('approval'));
  await k.schema.dropTableIfExists('publication_grants');
}

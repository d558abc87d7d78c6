import type { Knex } from 'knex';

/**
 * Sessions: the durable record of work done with outside conversations. One row per
 * session (its contract, execution plan with step states, version), the conversations
 * attached to it, and its progress entries in the one order its workflow gave them. Every
 * write comes from the session's workflow (`session-<id>`), through activities.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('sessions', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('title').notNullable();
    t.text('goal');
    t.text('status').notNullable().checkIn(['open', 'completed']);
    // Bumped by each applied contract or execution plan: a plan names the version it was prepared on.
    t.integer('version').notNullable().defaultTo(0);
    t.jsonb('contract');
    t.jsonb('execution_plan');
    t.integer('progress_count').notNullable().defaultTo(0);
    t.uuid('workspace_id');
    // Evidence bound to requirements by name ({requirement_id, ref}), beside what progress attached.
    t.jsonb('evidence').notNullable().defaultTo('[]');
    t.jsonb('validation');
    t.jsonb('completion');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.index(['account_id', 'created_at', 'id']);
  });
  await k.schema.createTable('session_external_sessions', (t) => {
    t.text('session_id').notNullable().references('sessions.id');
    t.text('provider').notNullable();
    t.text('external_id').notNullable();
    t.text('url');
    t.timestamp('attached_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.primary(['session_id', 'provider', 'external_id']);
  });
  await k.schema.createTable('session_progress', (t) => {
    t.text('session_id').notNullable().references('sessions.id');
    t.integer('seq').notNullable();
    t.text('step_id').notNullable();
    t.text('status').notNullable().checkIn(['started', 'done', 'blocked', 'skipped']);
    t.text('note');
    t.jsonb('evidence').notNullable().defaultTo('[]');
    t.text('actor');
    t.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.primary(['session_id', 'seq']);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTable('session_progress');
  await k.schema.dropTable('session_external_sessions');
  await k.schema.dropTable('sessions');
}

import type { Knex } from 'knex';

/**
 * MCP tasks (a task-augmented `tools/call`). A task records only what links it to the
 * work it follows: the tool that started it and the arguments of the read that reports
 * that work (`subject`), so its status is always read from the same record the REST
 * routes read. `outcome` holds the answer of a call refused before any work began (that
 * task is failed from its start). Tasks belong to an account; they expire `expires_at`
 * (null: kept until the account's data is), and the hourly housekeeping deletes them.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('mcp_tasks', (t) => {
    t.uuid('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('tool').notNullable();
    t.jsonb('subject');
    t.jsonb('outcome');
    t.bigInteger('ttl_ms');
    t.integer('poll_interval_ms').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('expires_at', { useTz: true });
    t.index(['account_id', 'created_at', 'id']);
    t.index(['expires_at']);
  });
  await k.raw(`ALTER TABLE mcp_tasks ADD CONSTRAINT mcp_tasks_subject_or_outcome CHECK ((subject IS NULL) <> (outcome IS NULL))`);
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTableIfExists('mcp_tasks');
}

import type { Knex } from 'knex';

/**
 * Hosted invocations: one execution of a ready deployment, charged to the invoking
 * account like a run (reserve at acceptance under `invocation:<id>`, settle once), held
 * under a lease its execution renews, with its output artifacts by port. Where each
 * deployment is being served (the task queue of the worker holding its warm instances)
 * is recorded on the hosting.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('hostings', (t) => {
    t.text('serving_queue');
  });
  await k.schema.createTable('hosted_invocations', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    // The OAuth client (the key's client id) that planned it: only it may execute the plan.
    t.text('client_id').notNullable();
    t.text('lab_id').notNullable().references('labs.id');
    t.integer('hosting_generation').notNullable();
    t.text('reference').notNullable();
    t.text('package_sha256').notNullable();
    t.text('compute_profile').notNullable().references('compute_profiles.id');
    t.jsonb('inputs').notNullable();
    t.text('inputs_sha256').notNullable();
    t.integer('seed').notNullable();
    t.integer('max_seconds').notNullable();
    t.text('status').notNullable().checkIn(['queued', 'running', 'completed', 'failed', 'cancelled', 'expired']);
    t.bigInteger('reserved_micros').notNullable();
    t.bigInteger('settled_micros');
    t.jsonb('outputs');
    t.jsonb('error');
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('lease_expires_at', { useTz: true });
    t.timestamp('cancel_requested_at', { useTz: true });
    t.uuid('plan_id').references('plans.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.index(['account_id', 'created_at']);
    t.index(['lab_id', 'status']);
  });
  await k.schema.createTable('hosted_invocation_artifacts', (t) => {
    t.text('invocation_id').notNullable().references('hosted_invocations.id');
    t.text('port').notNullable();
    t.text('file_name').notNullable();
    t.text('content_type').notNullable();
    t.text('format').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.text('sha256').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.primary(['invocation_id', 'file_name']);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTable('hosted_invocation_artifacts');
  await k.schema.dropTable('hosted_invocations');
  await k.schema.alterTable('hostings', (t) => t.dropColumn('serving_queue'));
}

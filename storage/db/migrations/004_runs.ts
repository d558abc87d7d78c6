import type { Knex } from 'knex';

/** Plans (every prepare/execute pair), runs, their ordered events and artifacts. */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('plans', (t) => {
    t.uuid('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('kind').notNullable();
    t.jsonb('proposal').notNullable();
    t.jsonb('findings').notNullable().defaultTo('[]');
    t.text('status').notNullable().checkIn(['ready', 'blocked']);
    t.text('plan_sha256').notNullable();
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('consumed_at', { useTz: true });
    t.text('result_ref');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
  });
  await k.schema.createTable('runs', (t) => {
    t.uuid('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('kind').notNullable().checkIn(['hub', 'managed']);
    t.text('status').notNullable().checkIn(['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'timed_out']);
    t.text('ref').notNullable();
    t.text('resolved_ref').notNullable();
    t.text('release_id').references('releases.id');
    t.text('package_sha256').notNullable();
    t.jsonb('inputs').notNullable();
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.text('compute_profile').notNullable().references('compute_profiles.id');
    t.integer('max_runtime_seconds').notNullable();
    t.bigInteger('reserved_micros').notNullable();
    t.bigInteger('settled_micros');
    t.integer('seed').notNullable();
    t.double('progress').notNullable().defaultTo(0);
    t.integer('artifact_count').notNullable().defaultTo(0);
    t.integer('event_seq').notNullable().defaultTo(0);
    t.jsonb('outputs');
    t.jsonb('error');
    t.text('experiment_id');
    t.uuid('plan_id').references('plans.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'status']);
  });
  await k.schema.createTable('run_events', (t) => {
    t.uuid('run_id').notNullable().references('runs.id');
    t.integer('seq').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.text('type').notNullable();
    t.text('message').notNullable();
    t.jsonb('data').notNullable().defaultTo('{}');
    t.primary(['run_id', 'seq']);
  });
  await k.schema.createTable('run_artifacts', (t) => {
    t.text('id').primary();
    t.uuid('run_id').notNullable().references('runs.id');
    t.text('role').notNullable();
    t.text('file_name').notNullable();
    t.text('content_type').notNullable();
    t.text('format').notNullable();
    t.bigInteger('size_bytes').notNullable();
    t.text('sha256').notNullable();
    t.boolean('public').notNullable().defaultTo(true);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.unique(['run_id', 'file_name']);
  });
}

export async function down(k: Knex): Promise<void> {
  for (const t of ['run_artifacts', 'run_events', 'runs', 'plans']) await k.schema.dropTableIfExists(t);
}

import type { Knex } from 'knex';

/**
 * An invocation accepted for a deployment that is served is carried by its serving worker
 * alone, from its announcement to its ending; its workflow is started only when that
 * worker does not carry it (the announcement missed, the worker lost). `workflow_started_at`
 * says whether it has one; the partial index is what the workers' recovery reads. Every
 * invocation before this one had its workflow from its acceptance.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('hosted_invocations', (t) => {
    t.timestamp('workflow_started_at', { useTz: true });
  });
  await k('hosted_invocations').update({ workflow_started_at: k.ref('created_at') });
  await k.raw(`CREATE INDEX hosted_invocations_without_workflow ON hosted_invocations (created_at) WHERE workflow_started_at IS NULL AND status IN ('queued', 'running')`);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP INDEX IF EXISTS hosted_invocations_without_workflow');
  await k.schema.alterTable('hosted_invocations', (t) => {
    t.dropColumn('workflow_started_at');
  });
}

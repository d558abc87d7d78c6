import type { Knex } from 'knex';

/**
 * A hosted invocation whose cancellation is requested notifies `silico_invocation_cancels`
 * with its id, so the worker serving it stops its process at once (cancelWatch.ts), as
 * a run's does, rather than at its next lease renewal. Postgres delivers the notice when
 * the requesting transaction commits.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_notify_invocation_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('silico_invocation_cancels', NEW.id::text);
      RETURN NULL;
    END $$;
    CREATE TRIGGER hosted_invocations_cancel_notify AFTER UPDATE OF cancel_requested_at ON hosted_invocations
      FOR EACH ROW WHEN (NEW.cancel_requested_at IS NOT NULL AND OLD.cancel_requested_at IS NULL)
      EXECUTE FUNCTION silico_notify_invocation_cancel();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS hosted_invocations_cancel_notify ON hosted_invocations;
    DROP FUNCTION IF EXISTS silico_notify_invocation_cancel();
  `);
}

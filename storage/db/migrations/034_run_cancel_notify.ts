import type { Knex } from 'knex';

/**
 * A run that becomes `cancelling` notifies `silico_run_cancels` with its id, so the
 * worker executing it stops its lab at once (cancelWatch.ts) rather than when the
 * cancellation has gone through Temporal and back on the activity's next heartbeat.
 * Postgres delivers the notice when the marking transaction commits.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_notify_run_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('silico_run_cancels', NEW.id::text);
      RETURN NULL;
    END $$;
    CREATE TRIGGER runs_cancel_notify AFTER UPDATE OF status ON runs
      FOR EACH ROW WHEN (NEW.status = 'cancelling' AND OLD.status IS DISTINCT FROM 'cancelling')
      EXECUTE FUNCTION silico_notify_run_cancel();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS runs_cancel_notify ON runs;
    DROP FUNCTION IF EXISTS silico_notify_run_cancel();
  `);
}

import type { Knex } from 'knex';

/**
 * Every appended run event notifies `silico_run_events` with its run id, so api
 * processes wake the run's event streams (SSE) at once instead of polling the table.
 * Postgres delivers the notice when the appending transaction commits.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('silico_run_events', NEW.run_id::text);
      RETURN NULL;
    END $$;
    CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
      FOR EACH ROW EXECUTE FUNCTION silico_notify_run_event();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS run_events_notify ON run_events;
    DROP FUNCTION IF EXISTS silico_notify_run_event();
  `);
}

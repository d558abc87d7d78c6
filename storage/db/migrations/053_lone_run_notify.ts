import type { Knex } from 'knex';

/**
 * A run accepted on its own (not a study's) notifies `silico_lone_runs` with its compute
 * profile, so the workers executing studies' batches on that profile give their slots back
 * at their next run instead of at the end of their batch (issue 57, fair under load).
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_notify_lone_run() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('silico_lone_runs', NEW.compute_profile);
      RETURN NULL;
    END $$;
    CREATE TRIGGER runs_lone_accepted AFTER INSERT ON runs
      FOR EACH ROW WHEN (NEW.experiment_id IS NULL AND NEW.status IN ('queued', 'running')) EXECUTE FUNCTION silico_notify_lone_run();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS runs_lone_accepted ON runs;
    DROP FUNCTION IF EXISTS silico_notify_lone_run();
  `);
}

import type { Knex } from 'knex';

/**
 * Any change to the compute profiles (an operator's price, a bound, a new profile)
 * notifies `silico_compute_profiles_changed`, so api processes that keep profiles in
 * memory drop them at once, whoever made the change.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_notify_compute_profiles_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('silico_compute_profiles_changed', '');
      RETURN NULL;
    END $$;
    CREATE TRIGGER compute_profiles_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON compute_profiles
      FOR EACH STATEMENT EXECUTE FUNCTION silico_notify_compute_profiles_changed();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS compute_profiles_changed ON compute_profiles;
    DROP FUNCTION IF EXISTS silico_notify_compute_profiles_changed();
  `);
}

import type { Knex } from 'knex';

/**
 * Any change to the releases or to team membership (what decides which releases an
 * account may see) notifies `silico_releases_changed`, so api processes that keep
 * resolved references in memory drop them at once, whoever made the change.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_notify_releases_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('silico_releases_changed', TG_TABLE_NAME);
      RETURN NULL;
    END $$;
    CREATE TRIGGER releases_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON releases
      FOR EACH STATEMENT EXECUTE FUNCTION silico_notify_releases_changed();
    CREATE TRIGGER account_members_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON account_members
      FOR EACH STATEMENT EXECUTE FUNCTION silico_notify_releases_changed();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS releases_changed ON releases;
    DROP TRIGGER IF EXISTS account_members_changed ON account_members;
    DROP FUNCTION IF EXISTS silico_notify_releases_changed();
  `);
}

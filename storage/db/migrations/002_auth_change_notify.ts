import type { Knex } from 'knex';

/**
 * Any change to a key or an account (revocation, rotation, gateway, features) notifies
 * `silico_auth_changed`, so api processes that cache resolved keys drop them at once,
 * whoever made the change.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_notify_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('silico_auth_changed', TG_TABLE_NAME);
      RETURN NULL;
    END $$;
    CREATE TRIGGER api_keys_auth_changed AFTER UPDATE OR DELETE ON api_keys
      FOR EACH STATEMENT EXECUTE FUNCTION silico_notify_auth_changed();
    CREATE TRIGGER accounts_auth_changed AFTER UPDATE OR DELETE ON accounts
      FOR EACH STATEMENT EXECUTE FUNCTION silico_notify_auth_changed();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS api_keys_auth_changed ON api_keys;
    DROP TRIGGER IF EXISTS accounts_auth_changed ON accounts;
    DROP FUNCTION IF EXISTS silico_notify_auth_changed();
  `);
}

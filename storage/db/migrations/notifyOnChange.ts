import type { Knex } from 'knex';

/**
 * A migration that makes every change to `tables` notify `channel` (a statement trigger
 * calling `fn`, with the table's name as the payload), so api processes that keep what
 * those tables say in memory drop it at once, whoever made the change.
 */
export function notifyOnChange(fn: string, channel: string, tables: string[]): { up(k: Knex): Promise<void>; down(k: Knex): Promise<void> } {
  return {
    async up(k) {
      await k.raw(`
        CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_notify('${channel}', TG_TABLE_NAME);
          RETURN NULL;
        END $$;
        ${tables.map((t) => `CREATE TRIGGER ${t}_${channel} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}();`).join('\n')}
      `);
    },
    async down(k) {
      await k.raw(`
        ${tables.map((t) => `DROP TRIGGER IF EXISTS ${t}_${channel} ON ${t};`).join('\n')}
        DROP FUNCTION IF EXISTS ${fn}();
      `);
    },
  };
}

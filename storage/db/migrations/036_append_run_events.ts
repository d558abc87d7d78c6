import type { Knex } from 'knex';

/**
 * Appends several events to a run in one statement (`p_events`: an array of
 * `{type, message, data}`), numbered on from the run's counter in their order, as
 * silico_append_run_event numbers one: a lab's burst of log lines costs one round trip,
 * not one each. Returns the last sequence number.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_append_run_events(p_run uuid, p_events jsonb)
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      n integer := jsonb_array_length(p_events);
      last integer;
    BEGIN
      UPDATE runs SET event_seq = event_seq + n WHERE id = p_run RETURNING event_seq INTO last;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'no run %', p_run;
      END IF;
      INSERT INTO run_events (run_id, seq, type, message, data)
        SELECT p_run, last - n + e.i::integer, e.v->>'type', left(e.v->>'message', 4000), coalesce(e.v->'data', '{}')
        FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(v, i);
      RETURN last;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP FUNCTION IF EXISTS silico_append_run_events(uuid, jsonb);');
}

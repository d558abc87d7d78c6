import type { Knex } from 'knex';

/**
 * A run's terminal `state_changed` event is its last. A run cancelled without waiting for
 * its execution (workflows/run.ts) is ended while the worker may still be flushing the
 * lab's last log lines; appended after the end they would follow the terminal event, past
 * where every event stream closes. Both appenders now drop what arrives once the run's
 * newest event is the terminal change to its current status, and return that event's
 * sequence number. The events that end a run (its settlement, then its terminal change)
 * are appended after its status is set and before that event exists, so they still land.
 */
export const ENDED = `
  status IN ('completed', 'failed', 'cancelled', 'timed_out') AND EXISTS (
    SELECT 1 FROM run_events e
     WHERE e.run_id = runs.id AND e.seq = runs.event_seq AND e.type = 'state_changed' AND e.data->>'status' = runs.status)`;

/** What an appender answers when its run is missing (an error) or has ended (its last seq). */
const NOT_APPENDED = `
      SELECT event_seq INTO s FROM runs WHERE id = p_run;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'no run %', p_run;
      END IF;
      RETURN s;`;

export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE OR REPLACE FUNCTION silico_append_run_event(p_run uuid, p_type text, p_message text, p_data jsonb)
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      s integer;
    BEGIN
      UPDATE runs SET event_seq = event_seq + 1 WHERE id = p_run AND NOT (${ENDED}) RETURNING event_seq INTO s;
      IF NOT FOUND THEN${NOT_APPENDED}
      END IF;
      INSERT INTO run_events (run_id, seq, type, message, data) VALUES (p_run, s, p_type, left(p_message, 4000), coalesce(p_data, '{}'));
      RETURN s;
    END $$;

    CREATE OR REPLACE FUNCTION silico_append_run_events(p_run uuid, p_events jsonb)
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      n integer := jsonb_array_length(p_events);
      s integer;
    BEGIN
      UPDATE runs SET event_seq = event_seq + n WHERE id = p_run AND NOT (${ENDED}) RETURNING event_seq INTO s;
      IF NOT FOUND THEN${NOT_APPENDED}
      END IF;
      INSERT INTO run_events (run_id, seq, type, message, data)
        SELECT p_run, s - n + e.i::integer, e.v->>'type', left(e.v->>'message', 4000), coalesce(e.v->'data', '{}')
        FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(v, i);
      RETURN s;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    CREATE OR REPLACE FUNCTION silico_append_run_event(p_run uuid, p_type text, p_message text, p_data jsonb)
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      s integer;
    BEGIN
      UPDATE runs SET event_seq = event_seq + 1 WHERE id = p_run RETURNING event_seq INTO s;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'no run %', p_run;
      END IF;
      INSERT INTO run_events (run_id, seq, type, message, data) VALUES (p_run, s, p_type, left(p_message, 4000), coalesce(p_data, '{}'));
      RETURN s;
    END $$;

    CREATE OR REPLACE FUNCTION silico_append_run_events(p_run uuid, p_events jsonb)
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

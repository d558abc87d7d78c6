import type { Knex } from 'knex';
import * as finishBefore from './017_run_outputs_from_execution.ts';
import * as appendBefore from './038_terminal_event_last.ts';

/**
 * A run's transitions in fewer versions of its row. Each update of `runs` writes a new
 * version of a wide row with its index entries (a study run's row was rewritten about
 * eleven times), and the table, its indexes and the buffers they fill grow with them.
 * - silico_acquire_run_slot moved the run to running and then appended its event through
 *   silico_append_run_event, which updated the row again (its event counter): one update.
 * - silico_finish_run set the terminal state and then appended its two events the same
 *   way: one update. Under the row's lock and with the run not yet ended, the counter moves
 *   with the state and the events are inserted as they were.
 * - silico_append_run_events records a run's progress from the newest `progress` event
 *   with a fraction among those it appends, in the update it makes anyway, so an execution
 *   no longer writes its progress apart from its event.
 */
const acquireSlot = (event: 'apart' | 'with the state') => `
    CREATE OR REPLACE FUNCTION silico_acquire_run_slot(p_run uuid, p_max integer)
    RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
      acct text;
      st text;
      busy integer;
      seq integer;
    BEGIN
      SELECT account_id, status INTO acct, st FROM runs WHERE id = p_run;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'no run %', p_run;
      END IF;
      IF st <> 'queued' THEN
        RETURN st;
      END IF;
      PERFORM pg_advisory_xact_lock(hashtext('run-slots:' || acct));
      SELECT count(*) INTO busy FROM runs WHERE account_id = acct AND status IN ('running', 'cancelling');
      IF busy >= p_max THEN
        RETURN 'wait';
      END IF;
      UPDATE runs SET status = 'running'${event === 'with the state' ? ', event_seq = event_seq + 1' : ''} WHERE id = p_run AND status = 'queued' RETURNING event_seq INTO seq;
      IF NOT FOUND THEN
        SELECT status INTO st FROM runs WHERE id = p_run;
        RETURN st;
      END IF;
      ${event === 'with the state'
    ? `INSERT INTO run_events (run_id, seq, type, message, data) VALUES (p_run, seq, 'state_changed', 'Run is running.', '{"status": "running"}');`
    : `PERFORM silico_append_run_event(p_run, 'state_changed', 'Run is running.', '{"status": "running"}');`}
      RETURN 'running';
    END $$;
`;


export async function up(k: Knex): Promise<void> {
  await k.raw(acquireSlot('with the state'));
  await k.raw(`
    CREATE OR REPLACE FUNCTION silico_append_run_events(p_run uuid, p_events jsonb)
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      n integer := jsonb_array_length(p_events);
      fraction double precision := (
        SELECT (e.v->'data'->>'fraction')::double precision FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(v, i)
         WHERE e.v->>'type' = 'progress' AND jsonb_typeof(e.v->'data'->'fraction') = 'number'
         ORDER BY e.i DESC LIMIT 1);
      s integer;
    BEGIN
      UPDATE runs SET event_seq = event_seq + n, progress = CASE WHEN fraction IS NULL THEN progress ELSE least(1, greatest(0, fraction)) END
       WHERE id = p_run AND NOT (${appendBefore.ENDED}) RETURNING event_seq INTO s;
      IF NOT FOUND THEN
        SELECT event_seq INTO s FROM runs WHERE id = p_run;
        IF NOT FOUND THEN
          RAISE EXCEPTION 'no run %', p_run;
        END IF;
        RETURN s;
      END IF;
      INSERT INTO run_events (run_id, seq, type, message, data)
        SELECT p_run, s - n + e.i::integer, e.v->>'type', left(e.v->>'message', 4000), coalesce(e.v->'data', '{}')
        FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e(v, i);
      RETURN s;
    END $$;
  `);
  await k.raw(`
    CREATE OR REPLACE FUNCTION silico_finish_run(p_run uuid, p_status text, p_error jsonb, p_compute_seconds double precision, p_outputs jsonb)
    RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
      r runs%ROWTYPE;
      price bigint;
      seconds double precision;
      s record;
      seq integer;
    BEGIN
      SELECT * INTO r FROM runs WHERE id = p_run FOR UPDATE;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'no run %', p_run;
      END IF;
      IF r.status IN ('completed', 'failed', 'cancelled', 'timed_out') THEN
        RETURN r.status;
      END IF;
      SELECT price_per_second_micros INTO price FROM compute_profiles WHERE id = r.compute_profile;
      seconds := coalesce(p_compute_seconds, extract(epoch FROM clock_timestamp() - r.started_at)::double precision, 0);
      SELECT * INTO s FROM silico_settle_compute(r.account_id, 'run:' || r.id, least(ceil(greatest(seconds, 0) * price)::bigint, r.reserved_micros));
      UPDATE runs
         SET status = p_status, error = p_error, settled_micros = s.charged_micros, outputs = coalesce(p_outputs, outputs), finished_at = now(),
             progress = CASE WHEN p_status = 'completed' THEN 1 ELSE progress END, event_seq = event_seq + 2
       WHERE id = p_run
      RETURNING event_seq INTO seq;
      INSERT INTO run_events (run_id, seq, type, message, data) VALUES
        (p_run, seq - 1, 'charge_settled', format('Charged %s micro-dollars of %s reserved.', s.charged_micros, r.reserved_micros),
          jsonb_build_object('charged_micros', s.charged_micros, 'released_micros', r.reserved_micros - s.charged_micros)),
        (p_run, seq, 'state_changed', format('Run %s.', p_status),
          jsonb_build_object('status', p_status) || CASE WHEN p_error IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('error', p_error) END);
      RETURN p_status;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(acquireSlot('apart'));
  await appendBefore.up(k);
  await finishBefore.up(k);
}

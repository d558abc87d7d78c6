import type { Knex } from 'knex';
import * as finishBefore from './017_run_outputs_from_execution.ts';

/**
 * A run's ending in one update of its row. silico_finish_run set the run's terminal state
 * and then appended its two events through silico_append_run_event, which updated the row
 * once more for each (its event counter): three new versions of a wide row, each with its
 * index entries, for every run a study ends. Under the row's lock and with the run not yet
 * ended, the counter moves with the state and the two events are inserted as they were.
 */
export async function up(k: Knex): Promise<void> {
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
  await finishBefore.up(k);
}

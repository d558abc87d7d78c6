import type { Knex } from 'knex';

/**
 * A run's outputs are written by its execution activity (claim check: nothing that grows
 * with a lab's output passes through a workflow), so ending a run keeps them when the
 * workflow gives none. `finishRun` is silico_finish_run as migration 016 made it, with
 * `outputs` set from the given expression.
 */
const finishRun = (outputs: string) => `
    CREATE OR REPLACE FUNCTION silico_finish_run(p_run uuid, p_status text, p_error jsonb, p_compute_seconds double precision, p_outputs jsonb)
    RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
      r runs%ROWTYPE;
      price bigint;
      seconds double precision;
      s record;
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
         SET status = p_status, error = p_error, settled_micros = s.charged_micros, outputs = ${outputs}, finished_at = now(),
             progress = CASE WHEN p_status = 'completed' THEN 1 ELSE progress END
       WHERE id = p_run;
      PERFORM silico_append_run_event(p_run, 'charge_settled', format('Charged %s micro-dollars of %s reserved.', s.charged_micros, r.reserved_micros),
        jsonb_build_object('charged_micros', s.charged_micros, 'released_micros', r.reserved_micros - s.charged_micros));
      PERFORM silico_append_run_event(p_run, 'state_changed', format('Run %s.', p_status),
        jsonb_build_object('status', p_status) || CASE WHEN p_error IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('error', p_error) END);
      RETURN p_status;
    END $$;
`;

export async function up(k: Knex): Promise<void> {
  await k.raw(finishRun('coalesce(p_outputs, outputs)'));
}

export async function down(k: Knex): Promise<void> {
  await k.raw(finishRun('p_outputs'));
}

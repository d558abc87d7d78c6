import type { Knex } from 'knex';
import * as unacceptBefore from './019_unaccept_run.ts';

/**
 * A run accepted with a free concurrency slot of its account starts out running: the
 * acceptance (plan consumed, maximum reserved, row and first event) and the slot (its
 * `running` event) in one transaction and one round trip, so the run's workflow begins
 * with its execution instead of two control steps (issue 35). Without a free slot the
 * run stays queued and its workflow waits for one as before.
 *
 * A run undone because its workflow could not be started may now be `running` too: one
 * whose execution never began (no start, no sign of life) has nothing of its own yet.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_accept_run_running(p_run jsonb, p_plan uuid, p_max integer)
    RETURNS SETOF runs LANGUAGE plpgsql AS $$
    DECLARE
      run_id uuid := (p_run->>'id')::uuid;
    BEGIN
      PERFORM silico_accept_run(p_run, p_plan);
      PERFORM silico_acquire_run_slot(run_id, p_max);
      RETURN QUERY SELECT * FROM runs WHERE id = run_id;
    END $$;

    CREATE OR REPLACE FUNCTION silico_unaccept_run(p_run uuid)
    RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
      r runs%ROWTYPE;
      txn bigint;
    BEGIN
      SELECT * INTO r FROM runs WHERE id = p_run FOR UPDATE;
      IF NOT FOUND OR r.status NOT IN ('queued', 'running') OR r.started_at IS NOT NULL OR r.alive_at IS NOT NULL THEN
        RETURN false;
      END IF;
      SELECT id INTO txn FROM ledger_txns WHERE kind = 'reserve' AND ref = 'run:' || p_run;
      IF txn IS NOT NULL THEN
        UPDATE compute_balances
           SET available_micros = available_micros + r.reserved_micros, reserved_micros = reserved_micros - r.reserved_micros
         WHERE account_id = r.account_id;
        DELETE FROM ledger_entries WHERE txn_id = txn;
        DELETE FROM ledger_txns WHERE id = txn;
      END IF;
      IF r.plan_id IS NOT NULL THEN
        UPDATE plans SET consumed_at = NULL, result_ref = NULL WHERE id = r.plan_id AND result_ref = 'run:' || p_run;
      END IF;
      DELETE FROM run_events WHERE run_id = p_run;
      DELETE FROM runs WHERE id = p_run;
      RETURN true;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP FUNCTION IF EXISTS silico_accept_run_running(jsonb, uuid, integer);
    DROP FUNCTION IF EXISTS silico_unaccept_run(uuid);
  `);
  await unacceptBefore.up(k);
}

import type { Knex } from 'knex';

/**
 * Undoes the acceptance of a run whose workflow could not be started, leaving no trace:
 * its reservation (ledger entries and balance), its plan's use, its events and its row. Only
 * a run still `queued` is undone: anything else means a workflow has it.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_unaccept_run(p_run uuid)
    RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
      r runs%ROWTYPE;
      txn bigint;
    BEGIN
      SELECT * INTO r FROM runs WHERE id = p_run FOR UPDATE;
      IF NOT FOUND OR r.status <> 'queued' THEN
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
  await k.raw('DROP FUNCTION IF EXISTS silico_unaccept_run(uuid)');
}

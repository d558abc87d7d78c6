import type { Knex } from 'knex';
import { ACCEPT_STUDY_RUNS } from './051_study_runs_at_once.ts';

/**
 * A question study reserves its whole maximum as one ledger transaction,
 * `experiment:<id>`, instead of one `run:<id>` reservation per run (issue 57). Accepting
 * 100,000 runs spent 3.3 of Postgres's 7.8 s on the 300,000 ledger rows those took
 * (each with its foreign-key checks). Each run still keeps its own `reserved_micros`
 * and is settled on its own under `run:<id>`: its settlement draws its share from the
 * study's reservation, so the study's reservation and settlement stay exact to the
 * micro-dollar, and a study accepted before keeps its runs' own reservations.
 *
 * The per-row triggers a bulk acceptance skips are skipped by their WHEN clause, not by
 * a call of their function per row.
 */
/** 054's acceptance of a study's runs under one reservation, in one statement per table (057's down restores it). */
export const ACCEPT_STUDY_RUNS_RESERVED = `
    CREATE OR REPLACE FUNCTION silico_accept_study_runs(p_experiment text, p_run jsonb, p_ids uuid[], p_seeds bigint[], p_before integer)
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      acct text := p_run->>'account_id';
      each bigint := (p_run->>'reserved_micros')::bigint;
      total bigint := (p_run->>'reserved_micros')::bigint * cardinality(p_ids);
      shared jsonb := p_run - 'id' - 'seed' - 'status' - 'event_seq';
      cols text;
      vals text;
    BEGIN
      IF cardinality(p_ids) IS DISTINCT FROM cardinality(p_seeds) OR each IS NULL OR each < 0 THEN
        RAISE EXCEPTION 'a study''s runs need an id and a seed each, and a whole, non-negative reservation';
      END IF;
      IF cardinality(p_ids) = 0 THEN
        RETURN;
      END IF;
      IF p_before <> 0 THEN
        RAISE EXCEPTION 'a study''s runs are accepted as one set, with its reservation';
      END IF;
      UPDATE compute_balances
         SET available_micros = available_micros - total, reserved_micros = reserved_micros + total
       WHERE account_id = acct AND available_micros >= total;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'available compute cannot cover % micro-dollars', total USING ERRCODE = 'SL402';
      END IF;
      IF each > 0 THEN
        PERFORM silico_check_spend_caps(acct, p_run->>'key_id', each, total);
      END IF;
      IF silico_ledger_record(acct, 'reserve', 'experiment:' || p_experiment, NULL, ARRAY['available', 'reserved'], ARRAY[-total, total]) IS NULL THEN
        RAISE EXCEPTION 'study % already holds a reservation', p_experiment;
      END IF;
      PERFORM set_config('silico.bulk_accept', 'on', true);
      SELECT string_agg(quote_ident(key), ', '), string_agg('r.' || quote_ident(key), ', ') INTO cols, vals FROM jsonb_object_keys(shared) AS key;
      EXECUTE format('INSERT INTO runs (%s, id, seed, status, event_seq) SELECT %s, u.id, u.seed, ''queued'', 1 FROM jsonb_populate_record(NULL::runs, $1) AS r, unnest($2, $3) AS u(id, seed)', cols, vals)
        USING shared, p_ids, p_seeds;
      INSERT INTO run_events (run_id, seq, type, message, data)
        SELECT r, 1, 'state_changed', 'Run accepted and queued.', '{"status": "queued"}' FROM unnest(p_ids) AS r;
      INSERT INTO experiment_runs (run_id, experiment_id, arm_index, replicate, position)
        SELECT u.id, p_experiment, 0, (u.n - 1)::integer, u.n::integer FROM unnest(p_ids) WITH ORDINALITY AS u(id, n);
      PERFORM set_config('silico.bulk_accept', 'off', true);
    END $$;
`;

export async function up(k: Knex): Promise<void> {
  await k.raw(`
    ${ACCEPT_STUDY_RUNS_RESERVED}
    -- A run's reservation: its own (a lone run, an arm's run, a study's run accepted before
    -- 054), or its share of its study's (experiment_runs keeps the study of a detached run).
    CREATE FUNCTION silico_reserved_for(p_account text, p_ref text) RETURNS bigint LANGUAGE sql STABLE AS $$
      SELECT coalesce(
        (SELECT e.amount_micros FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
          WHERE t.kind = 'reserve' AND t.ref = p_ref AND t.account_id = p_account AND e.book = 'reserved'),
        (SELECT r.reserved_micros FROM runs r JOIN experiment_runs x ON x.run_id = r.id
           JOIN ledger_txns t ON t.kind = 'reserve' AND t.ref = 'experiment:' || x.experiment_id AND t.account_id = p_account
          WHERE p_ref LIKE 'run:%' AND r.id = substr(p_ref, 5)::uuid AND r.account_id = p_account))
    $$;

    CREATE OR REPLACE FUNCTION silico_settle_compute(p_account text, p_ref text, p_actual bigint, OUT charged_micros bigint, OUT released_micros bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      held bigint;
    BEGIN
      IF p_actual IS NULL OR p_actual < 0 THEN
        RAISE EXCEPTION 'charge must be a whole, non-negative number of micro-dollars';
      END IF;
      held := silico_reserved_for(p_account, p_ref);
      IF held IS NULL THEN
        RAISE EXCEPTION 'no reservation %', p_ref;
      END IF;
      charged_micros := least(p_actual, held);
      released_micros := held - charged_micros;
      IF silico_ledger_record(p_account, 'settle', p_ref, NULL, ARRAY['reserved', 'spent', 'available'], ARRAY[-held, charged_micros, released_micros]) IS NOT NULL THEN
        UPDATE compute_balances
           SET reserved_micros = reserved_micros - held, spent_micros = spent_micros + charged_micros, available_micros = available_micros + released_micros
         WHERE account_id = p_account;
      ELSE
        SELECT coalesce(sum(e.amount_micros) FILTER (WHERE e.book = 'spent'), 0), coalesce(sum(e.amount_micros) FILTER (WHERE e.book = 'available'), 0)
          INTO charged_micros, released_micros
          FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
         WHERE t.kind = 'settle' AND t.ref = p_ref;
      END IF;
    END $$;

    -- Undoes a study whose workflow could not start: as 051's, and its own reservation too.
    CREATE OR REPLACE FUNCTION silico_unaccept_experiment(p_experiment text)
    RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
      e experiments%ROWTYPE;
      held bigint;
      refs text[];
    BEGIN
      SELECT * INTO e FROM experiments WHERE id = p_experiment FOR UPDATE;
      IF NOT FOUND THEN
        RETURN false;
      END IF;
      PERFORM 1 FROM runs WHERE experiment_id = p_experiment FOR UPDATE;
      IF EXISTS (SELECT 1 FROM runs WHERE experiment_id = p_experiment AND status <> 'queued') THEN
        RETURN false;
      END IF;
      SELECT coalesce(sum(reserved_micros), 0), coalesce(array_agg('run:' || id), '{}') || ('experiment:' || p_experiment) INTO held, refs FROM runs WHERE experiment_id = p_experiment;
      UPDATE compute_balances SET available_micros = available_micros + held, reserved_micros = reserved_micros - held WHERE account_id = e.account_id;
      DELETE FROM ledger_entries WHERE txn_id IN (SELECT id FROM ledger_txns WHERE kind = 'reserve' AND ref = ANY(refs));
      DELETE FROM ledger_txns WHERE kind = 'reserve' AND ref = ANY(refs);
      DELETE FROM run_events WHERE run_id IN (SELECT run_id FROM experiment_runs WHERE experiment_id = p_experiment);
      DELETE FROM experiment_runs WHERE experiment_id = p_experiment;
      DELETE FROM runs WHERE experiment_id = p_experiment;
      IF e.plan_id IS NOT NULL THEN
        UPDATE plans SET consumed_at = NULL, result_ref = NULL WHERE id = e.plan_id AND result_ref = 'experiment:' || p_experiment;
      END IF;
      DELETE FROM experiments WHERE id = p_experiment;
      RETURN true;
    END $$;

    -- Ends up to p_limit of a study's queued runs (with p_unassigned, those never given a
    -- parameter set) as cancelled, nothing charged, each in a transaction of its own as a
    -- run cancelled alone would be: a transaction that ended many would hold their study's
    -- row while starting runs wait for it, and deadlock with them. One call, not a round
    -- trip per run; ended is how many it took.
    CREATE PROCEDURE silico_cancel_queued_runs(p_experiment text, p_unassigned boolean, p_limit integer, INOUT ended integer DEFAULT 0)
    LANGUAGE plpgsql AS $$
    DECLARE
      rid uuid;
    BEGIN
      ended := 0;
      FOR rid IN
        SELECT x.run_id FROM experiment_runs x JOIN runs r ON r.id = x.run_id
         WHERE x.experiment_id = p_experiment AND r.status = 'queued'
           AND NOT (p_unassigned AND EXISTS (SELECT 1 FROM experiment_points p WHERE p.run_id = x.run_id))
         ORDER BY x.position LIMIT p_limit
      LOOP
        PERFORM silico_cancel_queued_run(rid);
        COMMIT;
        ended := ended + 1;
      END LOOP;
    END $$;

    DROP TRIGGER runs_spend_caps ON runs;
    CREATE TRIGGER runs_spend_caps BEFORE INSERT ON runs
      FOR EACH ROW WHEN (NEW.reserved_micros > 0 AND current_setting('silico.bulk_accept', true) IS DISTINCT FROM 'on') EXECUTE FUNCTION silico_spend_caps_hold();
    DROP TRIGGER run_events_notify ON run_events;
    CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
      FOR EACH ROW WHEN (current_setting('silico.bulk_accept', true) IS DISTINCT FROM 'on') EXECUTE FUNCTION silico_notify_run_event();
  `);
}

/**
 * Back to a reservation per run. A study accepted under 054 and not yet ended would find
 * no reservation for its runs' settlements: end those studies first.
 */
export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP PROCEDURE silico_cancel_queued_runs(text, boolean, integer, integer);
    DROP TRIGGER run_events_notify ON run_events;
    CREATE TRIGGER run_events_notify AFTER INSERT ON run_events FOR EACH ROW EXECUTE FUNCTION silico_notify_run_event();
    DROP TRIGGER runs_spend_caps ON runs;
    CREATE TRIGGER runs_spend_caps BEFORE INSERT ON runs FOR EACH ROW WHEN (NEW.reserved_micros > 0) EXECUTE FUNCTION silico_spend_caps_hold();
    CREATE OR REPLACE FUNCTION silico_reserved_for(p_account text, p_ref text) RETURNS bigint LANGUAGE sql STABLE AS $$
      SELECT e.amount_micros FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
       WHERE t.kind = 'reserve' AND t.ref = p_ref AND t.account_id = p_account AND e.book = 'reserved'
    $$;
    ${ACCEPT_STUDY_RUNS}
  `);
}

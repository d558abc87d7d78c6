import type { Knex } from 'knex';

/**
 * A question study's runs accepted as one set, so acceptance costs about the same for
 * 100,000 runs as for 1,000 (issue 57): every run is still what a lone run's acceptance
 * makes (its row, queued, with its first event, and its own reservation under
 * `run:<id>`), but each table takes all of them in one statement, the balance moves once
 * by their total, and the spend caps are checked once against that total (as the row
 * trigger would have found, run after run). Its undoing (a study whose workflow could not
 * start) is set-based the same way.
 *
 * `silico.bulk_accept` (transaction-local) tells the row triggers that the statement
 * inserting the study's runs has already done their work: the cap check, and the
 * notice of a new event, which nobody can be waiting for on runs not yet answered.
 *
 * A run's reuse source is indexed: without it, removing a run scans every run for those
 * reusing it, and undoing a study of n runs costs n such scans.
 */
/** 051's acceptance of a study's runs, each with its own reservation (migration 054's down restores it). */
export const ACCEPT_STUDY_RUNS = `
    -- p_run: the columns every run of the set shares (each run's reservation is its
    -- reserved_micros); p_ids and p_seeds: each run's own id and seed, in start order,
    -- placed after the study's first p_before runs. SL402 when the balance cannot cover
    -- them all, SLCAP when a spend cap does not allow them; nothing is left either way.
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
      UPDATE compute_balances
         SET available_micros = available_micros - total, reserved_micros = reserved_micros + total
       WHERE account_id = acct AND available_micros >= total;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'available compute cannot cover % micro-dollars', total USING ERRCODE = 'SL402';
      END IF;
      IF each > 0 THEN
        PERFORM silico_check_spend_caps(acct, p_run->>'key_id', each, total);
      END IF;
      WITH txns AS (
        INSERT INTO ledger_txns (account_id, kind, ref) SELECT acct, 'reserve', 'run:' || r FROM unnest(p_ids) AS r RETURNING id
      )
      INSERT INTO ledger_entries (txn_id, account_id, book, amount_micros)
        SELECT t.id, acct, b.book, b.amount FROM txns t CROSS JOIN (VALUES ('available', -each), ('reserved', each)) AS b(book, amount);
      PERFORM set_config('silico.bulk_accept', 'on', true);
      SELECT string_agg(quote_ident(key), ', '), string_agg('r.' || quote_ident(key), ', ') INTO cols, vals FROM jsonb_object_keys(shared) AS key;
      EXECUTE format('INSERT INTO runs (%s, id, seed, status, event_seq) SELECT %s, u.id, u.seed, ''queued'', 1 FROM jsonb_populate_record(NULL::runs, $1) AS r, unnest($2, $3) AS u(id, seed)', cols, vals)
        USING shared, p_ids, p_seeds;
      INSERT INTO run_events (run_id, seq, type, message, data)
        SELECT r, 1, 'state_changed', 'Run accepted and queued.', '{"status": "queued"}' FROM unnest(p_ids) AS r;
      INSERT INTO experiment_runs (run_id, experiment_id, arm_index, replicate, position)
        SELECT u.id, p_experiment, 0, (u.n - 1)::integer, p_before + u.n::integer FROM unnest(p_ids) WITH ORDINALITY AS u(id, n);
      PERFORM set_config('silico.bulk_accept', 'off', true);
    END $$;
`;

export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE INDEX runs_reused_from ON runs (reused_from) WHERE reused_from IS NOT NULL;

    CREATE FUNCTION silico_check_spend_caps(p_account text, p_key text, p_micros bigint, p_total bigint)
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      holder record;
      spent bigint;
    BEGIN
      FOR holder IN
        SELECT 'account' AS name, NULL::text AS key, monthly_cap_micros AS monthly, run_cap_micros AS per_run FROM accounts WHERE id = p_account
        UNION ALL
        SELECT 'key', id, monthly_cap_micros, run_cap_micros FROM api_keys WHERE id = p_key AND account_id = p_account
      LOOP
        IF holder.per_run IS NOT NULL AND p_micros > holder.per_run THEN
          RAISE EXCEPTION 'its maximum of % micro-dollars is over the %''s per-run cap of %', p_micros, holder.name, holder.per_run USING ERRCODE = 'SLCAP';
        END IF;
        IF holder.monthly IS NOT NULL THEN
          spent := silico_month_spent(p_account, holder.key);
          IF spent + p_total > holder.monthly THEN
            RAISE EXCEPTION 'its maximum of % micro-dollars is over what is left of the %''s monthly cap (% of %)', p_total, holder.name, greatest(holder.monthly - spent, 0), holder.monthly USING ERRCODE = 'SLCAP';
          END IF;
        END IF;
      END LOOP;
    END $$;

    CREATE OR REPLACE FUNCTION silico_check_spend_caps(p_account text, p_key text, p_micros bigint)
    RETURNS void LANGUAGE sql AS $$ SELECT silico_check_spend_caps(p_account, p_key, p_micros, p_micros) $$;

    CREATE OR REPLACE FUNCTION silico_spend_caps_hold() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF current_setting('silico.bulk_accept', true) = 'on' THEN
        RETURN NEW;
      END IF;
      PERFORM silico_check_spend_caps(NEW.account_id, NEW.key_id, NEW.reserved_micros);
      RETURN NEW;
    END $$;

    CREATE OR REPLACE FUNCTION silico_notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF current_setting('silico.bulk_accept', true) = 'on' THEN
        RETURN NULL;
      END IF;
      PERFORM pg_notify('silico_run_events', NEW.run_id::text);
      RETURN NULL;
    END $$;

    ${ACCEPT_STUDY_RUNS}
    -- Undoes the acceptance of a study whose workflow could not be started, leaving no
    -- trace, all its runs at once; false (changing nothing) when any of them has left the queue.
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
      SELECT coalesce(sum(reserved_micros), 0), coalesce(array_agg('run:' || id), '{}') INTO held, refs FROM runs WHERE experiment_id = p_experiment;
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
  `);
}

/** Back to one run at a time (the caps check keeps its four-argument form, the same check). */
export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP FUNCTION IF EXISTS silico_accept_study_runs(text, jsonb, uuid[], bigint[], integer);
    DROP INDEX IF EXISTS runs_reused_from;
    CREATE OR REPLACE FUNCTION silico_spend_caps_hold() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM silico_check_spend_caps(NEW.account_id, NEW.key_id, NEW.reserved_micros);
      RETURN NEW;
    END $$;
    CREATE OR REPLACE FUNCTION silico_notify_run_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('silico_run_events', NEW.run_id::text);
      RETURN NULL;
    END $$;
    CREATE OR REPLACE FUNCTION silico_unaccept_experiment(p_experiment text)
    RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
      e experiments%ROWTYPE;
      rid uuid;
    BEGIN
      SELECT * INTO e FROM experiments WHERE id = p_experiment FOR UPDATE;
      IF NOT FOUND THEN
        RETURN false;
      END IF;
      IF EXISTS (SELECT 1 FROM runs WHERE experiment_id = p_experiment AND status <> 'queued') THEN
        RETURN false;
      END IF;
      FOR rid IN SELECT run_id FROM experiment_runs WHERE experiment_id = p_experiment LOOP
        DELETE FROM experiment_runs WHERE run_id = rid;
        PERFORM silico_unaccept_run(rid);
      END LOOP;
      IF e.plan_id IS NOT NULL THEN
        UPDATE plans SET consumed_at = NULL, result_ref = NULL WHERE id = e.plan_id AND result_ref = 'experiment:' || p_experiment;
      END IF;
      DELETE FROM experiments WHERE id = p_experiment;
      RETURN true;
    END $$;
  `);
}

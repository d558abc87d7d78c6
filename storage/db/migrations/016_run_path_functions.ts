import type { Knex } from 'knex';

/**
 * The ledger's movements and a run's state transitions as database functions, so each is
 * one round trip however many rows it touches. Each function is one place for its rule;
 * storage/ledger.ts, storage/runLifecycle.ts and storage/db/runs.ts call them.
 *
 * Why in the database: a run used to cost 53 statements between api, worker and
 * Postgres, and on this service's hosts each round trip costs more CPU than the
 * statement it carries (test/bench/RESULTS.md). A function also makes each transition
 * atomic without a client-held transaction: accepting a run consumes its plan, reserves
 * its maximum, records it and appends its first event, or does none of it.
 *
 * Errors a caller maps to API answers carry our own SQLSTATEs (class SL, see
 * storage/db/sqlStates.ts).
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    -- One balanced ledger transaction, recorded once per (kind, ref): its id, or NULL
    -- when (kind, ref) was recorded before (a retry), in which case nothing is written.
    CREATE FUNCTION silico_ledger_record(p_account text, p_kind text, p_ref text, p_memo text, p_books text[], p_amounts bigint[])
    RETURNS bigint LANGUAGE plpgsql AS $$
    DECLARE
      txn bigint;
    BEGIN
      IF coalesce((SELECT sum(a) FROM unnest(p_amounts) AS a), 0) <> 0 THEN
        RAISE EXCEPTION 'ledger transaction %/% does not balance', p_kind, p_ref;
      END IF;
      INSERT INTO ledger_txns (account_id, kind, ref, memo) VALUES (p_account, p_kind, p_ref, p_memo)
        ON CONFLICT (kind, ref) DO NOTHING
        RETURNING id INTO txn;
      IF txn IS NOT NULL THEN
        INSERT INTO ledger_entries (txn_id, account_id, book, amount_micros)
          SELECT txn, p_account, u.book, u.amount FROM unnest(p_books, p_amounts) AS u(book, amount);
      END IF;
      RETURN txn;
    END $$;

    -- Adds compute to an account (funding -> available), once per ref.
    CREATE FUNCTION silico_grant_compute(p_account text, p_micros bigint, p_ref text, p_memo text)
    RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
      IF p_micros IS NULL OR p_micros <= 0 THEN
        RAISE EXCEPTION 'grant must be a positive whole number of micro-dollars';
      END IF;
      IF silico_ledger_record(p_account, 'grant', p_ref, p_memo, ARRAY['funding', 'available'], ARRAY[-p_micros, p_micros]) IS NULL THEN
        RETURN false;
      END IF;
      UPDATE compute_balances SET available_micros = available_micros + p_micros WHERE account_id = p_account;
      RETURN true;
    END $$;

    -- Reserves p_micros for one ref (available -> reserved), once. The conditional UPDATE
    -- takes the amount only if it is there (the row lock serialises reservations and the
    -- condition is re-checked on the newest balance), so concurrent reservations can never
    -- overdraw. False, with nothing left behind, when the balance cannot cover it; true
    -- for a ref reserved before.
    CREATE FUNCTION silico_reserve_compute(p_account text, p_micros bigint, p_ref text)
    RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
      txn bigint;
    BEGIN
      IF p_micros IS NULL OR p_micros < 0 THEN
        RAISE EXCEPTION 'reservation must be a whole, non-negative number of micro-dollars';
      END IF;
      txn := silico_ledger_record(p_account, 'reserve', p_ref, NULL, ARRAY['available', 'reserved'], ARRAY[-p_micros, p_micros]);
      IF txn IS NULL THEN
        RETURN true;
      END IF;
      UPDATE compute_balances
         SET available_micros = available_micros - p_micros, reserved_micros = reserved_micros + p_micros
       WHERE account_id = p_account AND available_micros >= p_micros;
      IF FOUND THEN
        RETURN true;
      END IF;
      -- The reservation did not happen, so neither do its entries.
      DELETE FROM ledger_entries WHERE txn_id = txn;
      DELETE FROM ledger_txns WHERE id = txn;
      RETURN false;
    END $$;

    -- Settles a ref's reservation, once: charges p_actual (never more than was reserved)
    -- and returns the rest to available. A repeated call changes nothing and answers the
    -- first settlement.
    CREATE FUNCTION silico_settle_compute(p_account text, p_ref text, p_actual bigint, OUT charged_micros bigint, OUT released_micros bigint)
    LANGUAGE plpgsql AS $$
    DECLARE
      held bigint;
    BEGIN
      IF p_actual IS NULL OR p_actual < 0 THEN
        RAISE EXCEPTION 'charge must be a whole, non-negative number of micro-dollars';
      END IF;
      SELECT e.amount_micros INTO held
        FROM ledger_entries e JOIN ledger_txns t ON t.id = e.txn_id
       WHERE t.kind = 'reserve' AND t.ref = p_ref AND t.account_id = p_account AND e.book = 'reserved';
      IF NOT FOUND THEN
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

    -- Marks a plan used by p_result_ref; false when it was already used (one approval, one result).
    CREATE FUNCTION silico_consume_plan(p_plan uuid, p_result_ref text)
    RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE plans SET consumed_at = now(), result_ref = p_result_ref WHERE id = p_plan AND consumed_at IS NULL;
      RETURN FOUND;
    END $$;

    -- Appends an event with its run's next sequence number. The counter lives on the run
    -- row: its lock serialises appenders, so numbers have no gaps and each event becomes
    -- visible only after the one before it.
    CREATE FUNCTION silico_append_run_event(p_run uuid, p_type text, p_message text, p_data jsonb)
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

    -- Accepts a run, all or nothing: consumes its plan (if any; SL409 when used), reserves
    -- its maximum (SL402 when the balance cannot cover it), records it queued (p_run holds
    -- the columns to set) and appends its first event. Returns the recorded row.
    CREATE FUNCTION silico_accept_run(p_run jsonb, p_plan uuid)
    RETURNS SETOF runs LANGUAGE plpgsql AS $$
    DECLARE
      run_id uuid := (p_run->>'id')::uuid;
      cols text;
    BEGIN
      IF p_plan IS NOT NULL AND NOT silico_consume_plan(p_plan, 'run:' || run_id) THEN
        RAISE EXCEPTION 'plan % was already used', p_plan USING ERRCODE = 'SL409';
      END IF;
      IF NOT silico_reserve_compute(p_run->>'account_id', (p_run->>'reserved_micros')::bigint, 'run:' || run_id) THEN
        RAISE EXCEPTION 'available compute cannot cover % micro-dollars', p_run->>'reserved_micros' USING ERRCODE = 'SL402';
      END IF;
      SELECT string_agg(quote_ident(key), ', ') INTO cols FROM jsonb_object_keys(p_run) AS key;
      RETURN QUERY EXECUTE format('INSERT INTO runs (%1$s) SELECT %1$s FROM jsonb_populate_record(NULL::runs, $1) RETURNING *', cols) USING p_run;
      PERFORM silico_append_run_event(run_id, 'state_changed', 'Run accepted and queued.', '{"status": "queued"}');
    END $$;

    -- Moves a queued run to running when its account has a free concurrency slot. A
    -- transaction-scoped advisory lock per account makes the count-then-update atomic
    -- across workers; each statement here takes a fresh snapshot, so the count sees every
    -- slot taken before the lock was granted. Returns 'running', 'wait', or the status
    -- that makes waiting pointless (already running, cancelling or ended).
    CREATE FUNCTION silico_acquire_run_slot(p_run uuid, p_max integer)
    RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
      acct text;
      st text;
      busy integer;
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
      UPDATE runs SET status = 'running' WHERE id = p_run AND status = 'queued';
      IF NOT FOUND THEN
        SELECT status INTO st FROM runs WHERE id = p_run;
        RETURN st;
      END IF;
      PERFORM silico_append_run_event(p_run, 'state_changed', 'Run is running.', '{"status": "running"}');
      RETURN 'running';
    END $$;

    -- Ends a run exactly once, whatever the ending: charges its compute (p_compute_seconds,
    -- or the wall time since execution began when unknown, none if it never began; never
    -- more than reserved), releases the rest, records the terminal state and appends its
    -- two events, in one transaction under the run's row lock. A run already terminal is
    -- left unchanged. Returns the run's status afterwards.
    CREATE FUNCTION silico_finish_run(p_run uuid, p_status text, p_error jsonb, p_compute_seconds double precision, p_outputs jsonb)
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
         SET status = p_status, error = p_error, settled_micros = s.charged_micros, outputs = p_outputs, finished_at = now(),
             progress = CASE WHEN p_status = 'completed' THEN 1 ELSE progress END
       WHERE id = p_run;
      PERFORM silico_append_run_event(p_run, 'charge_settled', format('Charged %s micro-dollars of %s reserved.', s.charged_micros, r.reserved_micros),
        jsonb_build_object('charged_micros', s.charged_micros, 'released_micros', r.reserved_micros - s.charged_micros));
      PERFORM silico_append_run_event(p_run, 'state_changed', format('Run %s.', p_status),
        jsonb_build_object('status', p_status) || CASE WHEN p_error IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('error', p_error) END);
      RETURN p_status;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP FUNCTION IF EXISTS silico_finish_run(uuid, text, jsonb, double precision, jsonb);
    DROP FUNCTION IF EXISTS silico_acquire_run_slot(uuid, integer);
    DROP FUNCTION IF EXISTS silico_accept_run(jsonb, uuid);
    DROP FUNCTION IF EXISTS silico_append_run_event(uuid, text, text, jsonb);
    DROP FUNCTION IF EXISTS silico_consume_plan(uuid, text);
    DROP FUNCTION IF EXISTS silico_settle_compute(text, text, bigint);
    DROP FUNCTION IF EXISTS silico_reserve_compute(text, bigint, text);
    DROP FUNCTION IF EXISTS silico_grant_compute(text, bigint, text, text);
    DROP FUNCTION IF EXISTS silico_ledger_record(text, text, text, text, text[], bigint[]);
  `);
}

import type { Knex } from 'knex';
import { ACCEPT_STUDY_RUNS_RESERVED } from './054_study_reservation.ts';
import { ACCEPT_STUDY_RUN_COUNT } from './055_study_run_ids.ts';

/**
 * A question study's runs are accepted in statements of at most STUDY_SLICE runs each,
 * still in the one transaction of the acceptance, all or nothing (issue 57).
 *
 * A statement holds its rows' foreign-key checks until it ends: seven a run for `runs`,
 * so 700,000 queued checks when 100,000 runs went in one statement, and the backend's
 * memory grew with the study (30 MiB at its peak, 7 MiB for 10,000 runs; probed on the
 * dev stack). In slices the peak is a slice's whatever the size, and a count of runs
 * (055's form) gets its ids a slice at a time instead of as one array of them all.
 *
 * The study's reservation stays one ledger transaction of its whole maximum, taken
 * before the first slice; a slice is 054's statements over its own ids, placed after
 * those before it.
 */
const STUDY_SLICE = 10000;

export async function up(k: Knex): Promise<void> {
  await k.raw(`
    -- Takes a study's whole maximum (p_count runs of p_run's reservation each) from its
    -- account's balance as one reservation, under the spend caps. SL402 when the balance
    -- cannot cover it.
    CREATE FUNCTION silico_reserve_study_runs(p_experiment text, p_run jsonb, p_count integer)
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      acct text := p_run->>'account_id';
      each bigint := (p_run->>'reserved_micros')::bigint;
      total bigint := (p_run->>'reserved_micros')::bigint * p_count;
    BEGIN
      IF each IS NULL OR each < 0 THEN
        RAISE EXCEPTION 'a study''s runs need a whole, non-negative reservation';
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
    END $$;

    -- One slice of a study's runs (p_run: the record they share), queued with their first
    -- event, placed after the study's first p_before runs. The caller has reserved for
    -- them. silico.bulk_accept tells the row triggers their work is done per set.
    CREATE FUNCTION silico_insert_study_runs(p_experiment text, p_run jsonb, p_ids uuid[], p_seeds bigint[], p_before integer)
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      shared jsonb := p_run - 'id' - 'seed' - 'status' - 'event_seq';
      cols text;
      vals text;
    BEGIN
      PERFORM set_config('silico.bulk_accept', 'on', true);
      SELECT string_agg(quote_ident(key), ', '), string_agg('r.' || quote_ident(key), ', ') INTO cols, vals FROM jsonb_object_keys(shared) AS key;
      EXECUTE format('INSERT INTO runs (%s, id, seed, status, event_seq) SELECT %s, u.id, u.seed, ''queued'', 1 FROM jsonb_populate_record(NULL::runs, $1) AS r, unnest($2, $3) AS u(id, seed)', cols, vals)
        USING shared, p_ids, p_seeds;
      INSERT INTO run_events (run_id, seq, type, message, data)
        SELECT r, 1, 'state_changed', 'Run accepted and queued.', '{"status": "queued"}' FROM unnest(p_ids) AS r;
      INSERT INTO experiment_runs (run_id, experiment_id, arm_index, replicate, position)
        SELECT u.id, p_experiment, 0, (p_before + u.n - 1)::integer, (p_before + u.n)::integer FROM unnest(p_ids) WITH ORDINALITY AS u(id, n);
      PERFORM set_config('silico.bulk_accept', 'off', true);
    END $$;

    -- 054's contract (an api of the release before 055 calls it): the runs' ids and seeds given.
    CREATE OR REPLACE FUNCTION silico_accept_study_runs(p_experiment text, p_run jsonb, p_ids uuid[], p_seeds bigint[], p_before integer)
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      n integer := coalesce(cardinality(p_ids), 0);
    BEGIN
      IF n <> coalesce(cardinality(p_seeds), 0) THEN
        RAISE EXCEPTION 'a study''s runs need an id and a seed each';
      END IF;
      IF n = 0 THEN
        RETURN;
      END IF;
      IF p_before <> 0 THEN
        RAISE EXCEPTION 'a study''s runs are accepted as one set, with its reservation';
      END IF;
      PERFORM silico_reserve_study_runs(p_experiment, p_run, n);
      FOR lo IN 1..n BY ${STUDY_SLICE} LOOP
        PERFORM silico_insert_study_runs(p_experiment, p_run, p_ids[lo:lo + ${STUDY_SLICE - 1}], p_seeds[lo:lo + ${STUDY_SLICE - 1}], lo - 1);
      END LOOP;
    END $$;

    -- 055's contract: p_count runs, each given its id here, a slice at a time, and p_run's seed.
    CREATE OR REPLACE FUNCTION silico_accept_study_runs(p_experiment text, p_run jsonb, p_count integer)
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      seed bigint := (p_run->>'seed')::bigint;
      k integer;
    BEGIN
      IF p_count IS NULL OR p_count < 0 OR seed IS NULL THEN
        RAISE EXCEPTION 'a study''s runs need a count and a seed';
      END IF;
      IF p_count = 0 THEN
        RETURN;
      END IF;
      PERFORM silico_reserve_study_runs(p_experiment, p_run, p_count);
      FOR lo IN 1..p_count BY ${STUDY_SLICE} LOOP
        k := least(${STUDY_SLICE}, p_count - lo + 1);
        PERFORM silico_insert_study_runs(p_experiment, p_run,
          ARRAY(SELECT gen_random_uuid() FROM generate_series(1, k)), array_fill(seed, ARRAY[k]), lo - 1);
      END LOOP;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    ${ACCEPT_STUDY_RUNS_RESERVED}
    CREATE OR REPLACE ${ACCEPT_STUDY_RUN_COUNT}
    DROP FUNCTION silico_insert_study_runs(text, jsonb, uuid[], bigint[], integer);
    DROP FUNCTION silico_reserve_study_runs(text, jsonb, integer);
  `);
}

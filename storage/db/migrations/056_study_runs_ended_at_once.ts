import type { Knex } from 'knex';

/**
 * A closed study's queued runs end a slice at a time in one statement each, not a
 * transaction per run (054's procedure): closing a 100,000-run study took about two
 * minutes inside its PATCH, 100,000 commits, and each run's ending updated the study's
 * row again.
 *
 * Each run ends exactly as silico_cancel_queued_run ends it: cancelled, nothing charged,
 * its share of the study's reservation released under its own `run:<id>` settlement, its
 * `charge_settled` and `state_changed` events, its webhook. The study's row is touched once
 * a slice instead of once a run (runs_touch_experiment is skipped while `silico.bulk_end`
 * is on).
 *
 * Runs another transaction holds (a batch starting one, an ending in flight) are skipped,
 * never waited for: a slice that waited on one run while holding the others' locks could
 * deadlock with it. The caller ends those one at a time afterwards (054's procedure). A
 * study accepted before 054, whose runs hold reservations of their own, is left to that
 * procedure too: the answer is NULL.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER runs_touch_experiment ON runs;
    CREATE TRIGGER runs_touch_experiment AFTER UPDATE OF status ON runs
      FOR EACH ROW WHEN (NEW.experiment_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status AND current_setting('silico.bulk_end', true) IS DISTINCT FROM 'on')
      EXECUTE FUNCTION silico_touch_experiment();

    CREATE FUNCTION silico_cancel_queued_study_runs(p_experiment text, p_unassigned boolean, p_limit integer)
    RETURNS integer LANGUAGE plpgsql AS $$
    DECLARE
      acct text;
      ended integer;
      released bigint;
    BEGIN
      SELECT account_id INTO acct FROM experiments WHERE id = p_experiment;
      IF NOT FOUND OR NOT EXISTS (SELECT 1 FROM ledger_txns WHERE kind = 'reserve' AND ref = 'experiment:' || p_experiment AND account_id = acct) THEN
        RETURN NULL;
      END IF;
      PERFORM set_config('silico.bulk_end', 'on', true);
      WITH picked AS (
        SELECT r.id, r.reserved_micros AS held, r.event_seq AS seq
          FROM runs r JOIN experiment_runs x ON x.run_id = r.id
         WHERE x.experiment_id = p_experiment AND r.status = 'queued'
           AND NOT (p_unassigned AND EXISTS (SELECT 1 FROM experiment_points p WHERE p.run_id = r.id))
         ORDER BY x.position LIMIT p_limit
           FOR UPDATE OF r SKIP LOCKED
      ), settled AS (
        -- A run settled before (a retry) is not released twice: only new settlements count.
        INSERT INTO ledger_txns (account_id, kind, ref, memo)
          SELECT acct, 'settle', 'run:' || p.id, NULL FROM picked p
          ON CONFLICT (kind, ref) DO NOTHING
          RETURNING id, substr(ref, 5)::uuid AS run_id
      ), entries AS (
        INSERT INTO ledger_entries (txn_id, account_id, book, amount_micros)
          SELECT s.id, acct, b.book, b.amount FROM settled s JOIN picked p ON p.id = s.run_id
           CROSS JOIN LATERAL (VALUES ('reserved', -p.held), ('spent', 0::bigint), ('available', p.held)) AS b(book, amount)
          RETURNING book, amount_micros
      ), runs_ended AS (
        UPDATE runs r SET status = 'cancelled', error = NULL, settled_micros = 0, finished_at = now(), event_seq = r.event_seq + 2
          FROM picked p WHERE r.id = p.id
          RETURNING r.id
      ), events AS (
        INSERT INTO run_events (run_id, seq, type, message, data)
          SELECT p.id, p.seq + 1, 'charge_settled', format('Charged 0 micro-dollars of %s reserved.', p.held),
                 jsonb_build_object('charged_micros', 0, 'released_micros', p.held) FROM picked p
          UNION ALL
          SELECT p.id, p.seq + 2, 'state_changed', 'Run cancelled.', '{"status": "cancelled"}'::jsonb FROM picked p
      )
      SELECT (SELECT count(*) FROM runs_ended), (SELECT coalesce(sum(amount_micros), 0) FROM entries WHERE book = 'available')
        INTO ended, released;
      PERFORM set_config('silico.bulk_end', 'off', true);
      -- The balance before the study's row, in the order a run's own ending takes them.
      IF released > 0 THEN
        UPDATE compute_balances SET reserved_micros = reserved_micros - released, available_micros = available_micros + released WHERE account_id = acct;
      END IF;
      IF ended > 0 THEN
        UPDATE experiments SET updated_at = now() WHERE id = p_experiment;
      END IF;
      RETURN ended;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP FUNCTION silico_cancel_queued_study_runs(text, boolean, integer);
    DROP TRIGGER runs_touch_experiment ON runs;
    CREATE TRIGGER runs_touch_experiment AFTER UPDATE OF status ON runs
      FOR EACH ROW WHEN (NEW.experiment_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
      EXECUTE FUNCTION silico_touch_experiment();
  `);
}

import type { Knex } from 'knex';

/**
 * Spend caps over everything an account spends, held by the database itself.
 *
 * What a holder has spent this calendar month (UTC), `silico_month_spent`: its runs
 * (lone or in a study) and hosted invocations created this month, each at what it was
 * charged once settled or what it holds in reserve until then (the most it can still
 * cost); for the account, also the standing cost of its deployments charged this month.
 * A key's spend is what was accepted with it (runs and invocations record their key).
 *
 * `silico_check_spend_caps` runs before a run or an invocation that reserves anything is
 * recorded (a trigger on each table), after its reservation: the reservation's UPDATE of
 * the account's balance row holds that row's lock to the end of the transaction, so two
 * acceptances of one account are serialised and the second one's check sees the first.
 * The plan already refused or bounded what a cap does not allow; this is what keeps two
 * concurrent acceptances (or the runs of one study together) from passing a cap between
 * them. SLCAP names the cap.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('hosted_invocations', (t) => {
    t.text('key_id');
  });
  await k.raw(`CREATE INDEX hosted_invocations_key_month ON hosted_invocations (key_id, created_at) WHERE key_id IS NOT NULL`);
  await k.raw(`CREATE INDEX ledger_txns_account_kind_month ON ledger_txns (account_id, kind, created_at)`);
  await k.raw(`
    CREATE FUNCTION silico_month_spent(p_account text, p_key text)
    RETURNS bigint LANGUAGE plpgsql STABLE AS $$
    DECLARE
      since timestamptz := date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
      runs_spent bigint;
      invocations_spent bigint;
      hosting_spent bigint := 0;
    BEGIN
      IF p_key IS NULL THEN
        SELECT coalesce(sum(coalesce(settled_micros, reserved_micros)), 0) INTO runs_spent FROM runs WHERE account_id = p_account AND created_at >= since;
        SELECT coalesce(sum(coalesce(settled_micros, reserved_micros)), 0) INTO invocations_spent FROM hosted_invocations WHERE account_id = p_account AND created_at >= since;
        SELECT coalesce(sum(e.amount_micros), 0) INTO hosting_spent
          FROM ledger_txns t JOIN ledger_entries e ON e.txn_id = t.id AND e.book = 'spent'
         WHERE t.account_id = p_account AND t.kind = 'hosting' AND t.created_at >= since;
      ELSE
        SELECT coalesce(sum(coalesce(settled_micros, reserved_micros)), 0) INTO runs_spent FROM runs WHERE key_id = p_key AND created_at >= since;
        SELECT coalesce(sum(coalesce(settled_micros, reserved_micros)), 0) INTO invocations_spent FROM hosted_invocations WHERE key_id = p_key AND created_at >= since;
      END IF;
      RETURN runs_spent + invocations_spent + hosting_spent;
    END $$;

    CREATE FUNCTION silico_check_spend_caps(p_account text, p_key text, p_micros bigint)
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
          IF spent + p_micros > holder.monthly THEN
            RAISE EXCEPTION 'its maximum of % micro-dollars is over what is left of the %''s monthly cap (% of %)', p_micros, holder.name, greatest(holder.monthly - spent, 0), holder.monthly USING ERRCODE = 'SLCAP';
          END IF;
        END IF;
      END LOOP;
    END $$;

    CREATE FUNCTION silico_spend_caps_hold() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM silico_check_spend_caps(NEW.account_id, NEW.key_id, NEW.reserved_micros);
      RETURN NEW;
    END $$;
    CREATE TRIGGER runs_spend_caps BEFORE INSERT ON runs
      FOR EACH ROW WHEN (NEW.reserved_micros > 0) EXECUTE FUNCTION silico_spend_caps_hold();
    CREATE TRIGGER hosted_invocations_spend_caps BEFORE INSERT ON hosted_invocations
      FOR EACH ROW WHEN (NEW.reserved_micros > 0) EXECUTE FUNCTION silico_spend_caps_hold();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS hosted_invocations_spend_caps ON hosted_invocations;
    DROP TRIGGER IF EXISTS runs_spend_caps ON runs;
    DROP FUNCTION IF EXISTS silico_spend_caps_hold();
    DROP FUNCTION IF EXISTS silico_check_spend_caps(text, text, bigint);
    DROP FUNCTION IF EXISTS silico_month_spent(text, text);
    DROP INDEX IF EXISTS ledger_txns_account_kind_month;
    DROP INDEX IF EXISTS hosted_invocations_key_month;
  `);
  await k.schema.alterTable('hosted_invocations', (t) => t.dropColumn('key_id'));
}

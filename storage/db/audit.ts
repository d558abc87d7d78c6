import type { Db } from './knex.ts';

/**
 * What the state of record says about money and runs, read straight from Postgres: the
 * figures a soak (or an operator) checks after faults. Every count that is not zero in
 * `problems` is a loss, a double charge or a gap. `accountIds` narrows it to those
 * accounts (a test's own); without it the whole database is read.
 */
export interface LedgerAudit {
  runs: { accepted: number; terminal: number; open: number };
  reservations: number;
  settlements: number;
  problems: {
    /** An account whose balance books differ from the sum of its ledger's entries. */
    balances_off_ledger: number;
    /** A terminal run that reserved compute and was never settled (money held for ever). */
    terminal_runs_unsettled: number;
    /** A run settled, or a run charged on its record, other than exactly once from its reservation. */
    runs_charged_wrongly: number;
    /** A ledger transaction whose entries do not sum to zero. */
    unbalanced_transactions: number;
    /** A run whose events' seq is not 1, 2, 3, ... without a gap. */
    runs_with_event_gaps: number;
  };
}

export async function auditLedger(db: Db, accountIds?: string[]): Promise<LedgerAudit> {
  const scoped = accountIds !== undefined;
  const ids = accountIds ?? [];
  const { rows: [r] } = await db.raw<{ rows: Array<Record<string, string>> }>(`
    WITH acct AS (SELECT id FROM accounts WHERE NOT ? OR id = ANY(?::text[])),
    run AS (SELECT r.* FROM runs r JOIN acct ON acct.id = r.account_id),
    txn AS (SELECT t.* FROM ledger_txns t JOIN acct ON acct.id = t.account_id),
    books AS (
      SELECT e.account_id,
        sum(e.amount_micros) FILTER (WHERE e.book = 'available') AS available,
        sum(e.amount_micros) FILTER (WHERE e.book = 'reserved') AS reserved,
        sum(e.amount_micros) FILTER (WHERE e.book = 'spent') AS spent
      FROM ledger_entries e JOIN acct ON acct.id = e.account_id GROUP BY e.account_id
    ),
    settled AS (SELECT ref, count(*) AS n FROM txn WHERE kind = 'settle' GROUP BY ref),
    charged AS (
      SELECT t.ref, sum(e.amount_micros) FILTER (WHERE e.book = 'spent') AS spent
      FROM txn t JOIN ledger_entries e ON e.txn_id = t.id WHERE t.kind = 'settle' GROUP BY t.ref
    ),
    seqs AS (SELECT ev.run_id, count(*) AS n, min(ev.seq) AS lo, max(ev.seq) AS hi FROM run_events ev JOIN run ON run.id = ev.run_id GROUP BY ev.run_id)
    SELECT
      (SELECT count(*) FROM run) AS accepted,
      (SELECT count(*) FROM run WHERE status IN ('completed', 'failed', 'cancelled', 'timed_out')) AS terminal,
      (SELECT count(*) FROM run WHERE status IN ('queued', 'running', 'cancelling')) AS open,
      (SELECT count(*) FROM txn WHERE kind = 'reserve') AS reservations,
      (SELECT count(*) FROM txn WHERE kind = 'settle') AS settlements,
      (SELECT count(*) FROM compute_balances b JOIN acct ON acct.id = b.account_id LEFT JOIN books k ON k.account_id = b.account_id
        WHERE b.available_micros <> coalesce(k.available, 0) OR b.reserved_micros <> coalesce(k.reserved, 0) OR b.spent_micros <> coalesce(k.spent, 0)) AS balances_off_ledger,
      (SELECT count(*) FROM run WHERE status IN ('completed', 'failed', 'cancelled', 'timed_out') AND reserved_micros > 0
        AND NOT EXISTS (SELECT 1 FROM settled s WHERE s.ref = 'run:' || run.id)) AS terminal_runs_unsettled,
      (SELECT count(*) FROM run LEFT JOIN settled s ON s.ref = 'run:' || run.id LEFT JOIN charged c ON c.ref = 'run:' || run.id
        WHERE coalesce(s.n, 0) > 1 OR (s.n = 1 AND (run.settled_micros IS DISTINCT FROM c.spent OR c.spent > run.reserved_micros))) AS runs_charged_wrongly,
      (SELECT count(*) FROM (SELECT t.id FROM txn t JOIN ledger_entries e ON e.txn_id = t.id GROUP BY t.id HAVING sum(e.amount_micros) <> 0) x) AS unbalanced_transactions,
      (SELECT count(*) FROM seqs WHERE lo <> 1 OR hi <> n) AS runs_with_event_gaps`, [scoped, ids]);
  const n = (k: string) => Number(r![k]);
  return {
    runs: { accepted: n('accepted'), terminal: n('terminal'), open: n('open') },
    reservations: n('reservations'),
    settlements: n('settlements'),
    problems: {
      balances_off_ledger: n('balances_off_ledger'),
      terminal_runs_unsettled: n('terminal_runs_unsettled'),
      runs_charged_wrongly: n('runs_charged_wrongly'),
      unbalanced_transactions: n('unbalanced_transactions'),
      runs_with_event_gaps: n('runs_with_event_gaps'),
    },
  };
}

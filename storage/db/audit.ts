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
  /** Ledger movements that are not runs': operator grants, confirmed purchases and the refunds taken back. */
  grants: number;
  purchases: { paid: number; credited: number; refunds: number };
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
    /** A purchase credited other than exactly once and exactly its amount when paid (never when not), or whose recovered refunds differ from its refund transactions. */
    purchases_credited_wrongly: number;
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
    pur AS (SELECT p.* FROM purchases p JOIN acct ON acct.id = p.account_id),
    pur_credit AS (
      SELECT t.ref, count(DISTINCT t.id) AS n, sum(e.amount_micros) FILTER (WHERE e.book = 'available') AS micros
      FROM txn t JOIN ledger_entries e ON e.txn_id = t.id WHERE t.kind = 'purchase' GROUP BY t.ref
    ),
    pur_refund AS (
      SELECT pe.purchase_id, sum(e.amount_micros) FILTER (WHERE e.book = 'funding') AS micros
      FROM txn t JOIN ledger_entries e ON e.txn_id = t.id JOIN purchase_events pe ON t.ref = 'refund:' || pe.id
      WHERE t.kind = 'refund' GROUP BY pe.purchase_id
    ),
    seqs AS (SELECT ev.run_id, count(*) AS n, min(ev.seq) AS lo, max(ev.seq) AS hi FROM run_events ev JOIN run ON run.id = ev.run_id GROUP BY ev.run_id)
    SELECT
      (SELECT count(*) FROM run) AS accepted,
      (SELECT count(*) FROM run WHERE status IN ('completed', 'failed', 'cancelled', 'timed_out')) AS terminal,
      (SELECT count(*) FROM run WHERE status IN ('queued', 'running', 'cancelling')) AS open,
      (SELECT count(*) FROM txn WHERE kind = 'reserve') AS reservations,
      (SELECT count(*) FROM txn WHERE kind = 'settle') AS settlements,
      (SELECT count(*) FROM txn WHERE kind = 'grant') AS grants,
      (SELECT count(*) FROM pur WHERE status IN ('paid', 'refunded')) AS purchases_paid,
      (SELECT count(*) FROM txn WHERE kind = 'purchase') AS purchases_credited,
      (SELECT count(*) FROM txn WHERE kind = 'refund') AS refunds,
      (SELECT count(*) FROM pur LEFT JOIN pur_credit c ON c.ref = 'purchase:' || pur.id LEFT JOIN pur_refund r ON r.purchase_id = pur.id
        WHERE (pur.status IN ('paid', 'refunded') AND (c.n IS DISTINCT FROM 1 OR c.micros IS DISTINCT FROM pur.amount_micros OR pur.credited_micros <> pur.amount_micros))
           OR (pur.status NOT IN ('paid', 'refunded') AND (c.n IS NOT NULL OR pur.credited_micros <> 0))
           OR coalesce(r.micros, 0) <> pur.recovered_micros) AS purchases_credited_wrongly,
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
    grants: n('grants'),
    purchases: { paid: n('purchases_paid'), credited: n('purchases_credited'), refunds: n('refunds') },
    problems: {
      balances_off_ledger: n('balances_off_ledger'),
      terminal_runs_unsettled: n('terminal_runs_unsettled'),
      runs_charged_wrongly: n('runs_charged_wrongly'),
      unbalanced_transactions: n('unbalanced_transactions'),
      runs_with_event_gaps: n('runs_with_event_gaps'),
      purchases_credited_wrongly: n('purchases_credited_wrongly'),
    },
  };
}

/** Webhook events against their deliveries (for the soak's table), of `accountIds`. */
export interface WebhookAudit {
  events: number;
  deliveries: number;
  delivered: number;
  pending: number;
  dead: number;
  /** Event ids of delivered deliveries: the receiver must have had each. */
  deliveredEventIds: string[];
  problems: {
    /** An event of a type an endpoint (live when it happened) subscribes to, with no delivery to it. */
    events_without_delivery: number;
  };
}

export async function auditWebhooks(db: Db, accountIds: string[]): Promise<WebhookAudit> {
  const { rows: [r] } = await db.raw<{ rows: Array<Record<string, string>> }>(`
    WITH ev AS (SELECT * FROM webhook_events WHERE account_id = ANY(?::text[])),
    dl AS (SELECT * FROM webhook_deliveries WHERE account_id = ANY(?::text[]))
    SELECT
      (SELECT count(*) FROM ev) AS events,
      (SELECT count(*) FROM dl) AS deliveries,
      (SELECT count(*) FROM dl WHERE status = 'delivered') AS delivered,
      (SELECT count(*) FROM dl WHERE status = 'pending') AS pending,
      (SELECT count(*) FROM dl WHERE status = 'dead') AS dead,
      (SELECT count(*) FROM ev JOIN webhook_endpoints ep ON ep.account_id = ev.account_id AND ev.type = ANY(ep.events)
        AND ep.created_at <= ev.created_at AND (ep.removed_at IS NULL OR ep.removed_at > ev.created_at)
        WHERE NOT EXISTS (SELECT 1 FROM dl WHERE dl.event_id = ev.id AND dl.endpoint_id = ep.id)) AS events_without_delivery`, [accountIds, accountIds]);
  const delivered = await db('webhook_deliveries').whereIn('account_id', accountIds).where({ status: 'delivered' }).distinct('event_id').pluck('event_id') as string[];
  const n = (k: string) => Number(r![k]);
  return {
    events: n('events'), deliveries: n('deliveries'), delivered: n('delivered'), pending: n('pending'), dead: n('dead'),
    deliveredEventIds: delivered,
    problems: { events_without_delivery: n('events_without_delivery') },
  };
}

/** Records that one approved plan made more than once (each plan is consumed by exactly one run, study or invocation), of `accountIds`. */
export async function auditPlanEffects(db: Db, accountIds: string[]): Promise<{ runs: number; experiments: number; hosted_invocations: number }> {
  const twice = async (table: 'runs' | 'experiments' | 'hosted_invocations') => Number((await db.raw<{ rows: Array<{ n: string }> }>(
    `SELECT count(*) AS n FROM (SELECT plan_id FROM ${table} WHERE account_id = ANY(?::text[]) AND plan_id IS NOT NULL GROUP BY plan_id HAVING count(*) > 1) x`, [accountIds])).rows[0]!.n);
  return { runs: await twice('runs'), experiments: await twice('experiments'), hosted_invocations: await twice('hosted_invocations') };
}

/** How many runs of `accountId` carry each value of metadata `name` (a client's own request ids). */
export async function runsByMetadata(db: Db, accountId: string, name: string): Promise<Map<string, number>> {
  const { rows } = await db.raw<{ rows: Array<{ v: string; n: string }> }>(
    `SELECT metadata->>? AS v, count(*) AS n FROM runs WHERE account_id = ? AND jsonb_exists(metadata, ?) GROUP BY 1`, [name, accountId, name]);
  return new Map(rows.map((x) => [x.v, Number(x.n)]));
}

/** What of `accountIds` has not ended yet: runs, studies, hosted invocations, webhook deliveries (a soak drains to zero before its audit). */
export async function openWork(db: Db, accountIds: string[]): Promise<{ runs: number; experiments: number; hosted_invocations: number; webhook_deliveries: number }> {
  const { rows: [r] } = await db.raw<{ rows: Array<Record<string, string>> }>(`
    SELECT
      (SELECT count(*) FROM runs WHERE account_id = ANY(?::text[]) AND status IN ('queued', 'running', 'cancelling')) AS runs,
      (SELECT count(*) FROM experiments WHERE account_id = ANY(?::text[]) AND completed_at IS NULL) AS experiments,
      (SELECT count(*) FROM hosted_invocations WHERE account_id = ANY(?::text[]) AND status IN ('queued', 'running')) AS hosted_invocations,
      (SELECT count(*) FROM webhook_deliveries WHERE account_id = ANY(?::text[]) AND status = 'pending') AS webhook_deliveries`, [accountIds, accountIds, accountIds, accountIds]);
  return { runs: Number(r!.runs), experiments: Number(r!.experiments), hosted_invocations: Number(r!.hosted_invocations), webhook_deliveries: Number(r!.webhook_deliveries) };
}

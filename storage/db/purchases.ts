import type { Db } from './knex.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';

/** A purchase of compute (migration 041): a checkout with the payment provider and what its confirmed events did. */
export interface PurchaseRow {
  id: string;
  account_id: string;
  key_id: string;
  amount_micros: number;
  currency: string;
  status: PurchaseStatus;
  provider: string;
  checkout_id: string | null;
  checkout_url: string | null;
  payment_id: string | null;
  credited_micros: number;
  refunded_micros: number;
  recovered_micros: number;
  failure: string | null;
  created_at: Date;
  expires_at: Date;
  paid_at: Date | null;
  ended_at: Date | null;
}

export type PurchaseStatus = 'pending' | 'paid' | 'failed' | 'refunded' | 'expired';
export const PURCHASE_STATUSES: readonly PurchaseStatus[] = ['pending', 'paid', 'failed', 'refunded', 'expired'];

/** What a verified provider event means for a purchase (purchase_events.effect). */
export const PURCHASE_EFFECTS = ['paid', 'failed', 'expired', 'refunded', 'ignored'] as const;
export type PurchaseEffect = (typeof PURCHASE_EFFECTS)[number];

/** A provider event as the service keeps it: its meaning, and the purchase or payment it names. */
export interface ProviderEvent {
  id: string;
  type: string;
  effect: PurchaseEffect;
  purchaseId: string | null;
  paymentId: string | null;
  /** What the provider says was paid (a completion), to check against the purchase. */
  amountMicros: number | null;
  /** A refund's cumulative amount refunded on the payment. */
  refundedTotalMicros: number | null;
  object: Record<string, unknown>;
  failure?: string | null;
}

const CREATED = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;

/** Records a new purchase, or answers the one a retry of the same request recorded. */
export async function createPurchase(db: Db, p: { id: string; account_id: string; key_id: string; amount_micros: number; expires_at: Date }): Promise<PurchaseRow> {
  await db('purchases').insert({ ...p, status: 'pending' }).onConflict('id').ignore();
  return (await db('purchases').where({ id: p.id, account_id: p.account_id }).first()) as PurchaseRow;
}

/** The provider's checkout for a purchase, once created. */
export async function setCheckout(db: Db, id: string, checkout: { id: string; url: string }): Promise<PurchaseRow> {
  const [row] = await db('purchases').where({ id }).update({ checkout_id: checkout.id, checkout_url: checkout.url }).returning('*');
  return row as PurchaseRow;
}

/** Removes a purchase no event has touched (its checkout or workflow could not be made). */
export async function discardPurchase(db: Db, id: string): Promise<void> {
  await db('purchases').where({ id, status: 'pending' }).whereNotExists(db('purchase_events').where({ purchase_id: id }).select(db.raw('1'))).delete();
}

/** One of the account's purchases (another account's is not found); any account's when none is given (the operator's). */
export async function getPurchase(db: Db, accountId: string | undefined, id: string): Promise<PurchaseRow | undefined> {
  const q = db('purchases').where({ id });
  if (accountId) q.andWhere({ account_id: accountId });
  return q.first();
}

export async function purchaseById(db: Db, id: string): Promise<PurchaseRow | undefined> {
  return db('purchases').where({ id }).first();
}

export async function listPurchases(db: Db, accountId: string, f: { limit: number; after?: Array<string | number> | null; status?: PurchaseStatus }): Promise<KeysetPage<PurchaseRow>> {
  const q = db('purchases').where({ account_id: accountId }).select('*', db.raw(`${CREATED} as sort_at`));
  if (f.status) q.where({ status: f.status });
  return keysetPage<PurchaseRow>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: CREATED } });
}

/**
 * Keeps a verified provider event once, by its id: a replayed or duplicated event finds
 * its row. Answers the purchase it concerns (named by the event, or by the payment a
 * purchase already has), or null when none does yet (a refund before its completion).
 */
export async function recordProviderEvent(db: Db, ev: ProviderEvent): Promise<{ purchase: Pick<PurchaseRow, 'id' | 'account_id' | 'amount_micros'> | null }> {
  return db.transaction(async (trx) => {
    // Under the payment's lock, a completion being applied either named the payment
    // before this lookup or will find this event when it takes the held refunds in.
    if (ev.paymentId) await lockPayments(trx, [ev.paymentId]);
    const named = ev.purchaseId ? await trx('purchases').where({ id: ev.purchaseId }).first('id') : undefined;
    const byPayment = !named && ev.paymentId ? await trx('purchases').where({ payment_id: ev.paymentId }).first('id') : undefined;
    const purchaseId = (named ?? byPayment)?.id ?? null;
    await trx('purchase_events').insert({
      id: ev.id, type: ev.type, effect: ev.effect, purchase_id: purchaseId, payment_id: ev.paymentId, amount_micros: ev.amountMicros,
      refunded_total_micros: ev.refundedTotalMicros, object: JSON.stringify(ev.object), failure: ev.failure ?? null,
    }).onConflict('id').ignore();
    const kept = await trx('purchase_events').where({ id: ev.id }).first('purchase_id');
    const id = kept?.purchase_id ?? purchaseId;
    return { purchase: id ? await trx('purchases').where({ id }).first('id', 'account_id', 'amount_micros') ?? null : null };
  });
}

/**
 * Takes the payments' transaction locks, in one order (no two transactions wait on each
 * other). A refund names only its payment: its recording and the completion that gives a
 * purchase that payment must not interleave, or the refund is held with nobody to apply it.
 */
async function lockPayments(trx: Db, paymentIds: string[]): Promise<void> {
  for (const id of [...new Set(paymentIds)].sort()) await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`payment:${id}`]);
}

interface EventRow { id: string; effect: PurchaseEffect; payment_id: string | null; amount_micros: string | null; refunded_total_micros: string | null; failure: string | null }

/**
 * Applies the purchase's events not yet applied, oldest first, in one transaction that
 * holds the purchase's row: a completion credits the purchase once (and takes the
 * payment's held refunds in), a failure or expiry ends a pending purchase, a refund takes
 * back what is left of the credit. A refund of a purchase not yet paid stays held.
 */
export async function applyPurchaseEvents(db: Db, purchaseId: string): Promise<PurchaseRow> {
  return db.transaction(async (trx) => {
    // The payments first, then the purchase's row: recording an event takes them in that
    // order too (its insert holds the row's key share).
    const pending = await trx('purchase_events').whereNull('applied_at').where({ purchase_id: purchaseId }).whereNotNull('payment_id').pluck('payment_id');
    const known = await trx('purchases').where({ id: purchaseId }).first('payment_id');
    await lockPayments(trx, [...pending, ...(known?.payment_id ? [known.payment_id] : [])]);
    let p = (await trx('purchases').where({ id: purchaseId }).forUpdate().first()) as PurchaseRow;
    for (;;) {
      const events: EventRow[] = await trx('purchase_events').whereNull('applied_at').where((w) => {
        w.where({ purchase_id: purchaseId });
        if (p.payment_id) w.orWhere((o) => o.whereNull('purchase_id').where({ payment_id: p.payment_id }));
      }).orderBy([{ column: 'received_at' }, { column: 'id' }]).select('id', 'effect', 'payment_id', 'amount_micros', 'refunded_total_micros', 'failure');
      let applied = 0;
      for (const ev of events) {
        const outcome = await applyOne(trx, p, ev);
        if (outcome === null) continue;
        await trx('purchase_events').where({ id: ev.id }).update({ applied_at: trx.fn.now(), outcome, purchase_id: purchaseId });
        p = (await trx('purchases').where({ id: purchaseId }).first()) as PurchaseRow;
        applied++;
      }
      // A completion names the payment: its held refunds are now this purchase's.
      if (!applied) return p;
    }
  });
}

/** What one event did ('credited', 'ignored: ...'), or null when it waits (a refund before the payment). */
async function applyOne(trx: Db, p: PurchaseRow, ev: EventRow): Promise<string | null> {
  const paid = p.status === 'paid' || p.status === 'refunded';
  switch (ev.effect) {
    case 'paid': {
      if (paid) return 'ignored: already paid';
      const amount = ev.amount_micros === null ? null : Number(ev.amount_micros);
      if (amount !== null && amount !== Number(p.amount_micros)) {
        return `ignored: the provider's amount ${amount} differs from the purchase's ${p.amount_micros}`;
      }
      await trx.raw('SELECT silico_credit_purchase(?, ?, ?)', [p.account_id, p.amount_micros, p.id]);
      await trx('purchases').where({ id: p.id }).update({
        status: 'paid', credited_micros: p.amount_micros, paid_at: trx.fn.now(), ended_at: null, failure: null, payment_id: ev.payment_id ?? p.payment_id,
      });
      return 'credited';
    }
    case 'failed':
    case 'expired':
      if (p.status !== 'pending') return `ignored: the purchase is ${p.status}`;
      await trx('purchases').where({ id: p.id }).update({ status: ev.effect, ended_at: trx.fn.now(), failure: ev.failure });
      return ev.effect;
    case 'refunded': {
      if (!paid) return null;
      const total = Number(ev.refunded_total_micros ?? 0);
      const more = Math.min(total, Number(p.amount_micros)) - Number(p.refunded_micros);
      if (more <= 0) return 'ignored: already refunded';
      const left = Number(p.credited_micros) - Number(p.recovered_micros);
      const { rows: [row] } = await trx.raw<{ rows: Array<{ taken: string }> }>('SELECT silico_debit_refund(?, ?, ?) AS taken', [p.account_id, Math.min(more, left), `refund:${ev.id}`]);
      const taken = Number(row!.taken);
      const refunded = Number(p.refunded_micros) + more;
      await trx('purchases').where({ id: p.id }).update({
        refunded_micros: refunded, recovered_micros: Number(p.recovered_micros) + taken,
        status: refunded >= Number(p.amount_micros) ? 'refunded' : 'paid', ended_at: refunded >= Number(p.amount_micros) ? trx.fn.now() : null,
      });
      return `refunded ${more}, took back ${taken}`;
    }
    default:
      return 'ignored';
  }
}

/** Ends a purchase still pending at its expiry; answers it as it stands. */
export async function expirePurchase(db: Db, id: string): Promise<PurchaseRow> {
  await db('purchases').where({ id, status: 'pending' }).where('expires_at', '<=', db.fn.now()).update({ status: 'expired', ended_at: db.fn.now() });
  return (await db('purchases').where({ id }).first()) as PurchaseRow;
}

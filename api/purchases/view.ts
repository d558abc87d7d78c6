import { microsToUsd } from '../../storage/ledger.ts';
import { isoTime } from '../../storage/ids.ts';
import type { PurchaseRow } from '../../storage/db/purchases.ts';

/** A purchase as its owner reads it: amounts in US dollars, the checkout only while it can be paid. */
export function purchaseView(p: PurchaseRow): Record<string, unknown> {
  const refunded = Number(p.refunded_micros);
  const recovered = Number(p.recovered_micros);
  return {
    object: 'purchase',
    purchase_id: p.id,
    status: p.status,
    amount_usd: microsToUsd(Number(p.amount_micros)),
    credited_usd: microsToUsd(Number(p.credited_micros)),
    refunded_usd: microsToUsd(refunded),
    recovered_usd: microsToUsd(recovered),
    unrecovered_usd: microsToUsd(refunded - recovered),
    checkout_url: p.status === 'pending' ? p.checkout_url : null,
    provider: 'stripe',
    failure: p.failure,
    created_at: isoTime(p.created_at),
    expires_at: isoTime(p.expires_at),
    paid_at: isoTime(p.paid_at),
    ended_at: isoTime(p.ended_at),
  };
}

/**
 * Output schemas of buying compute (api/purchases/view.ts purchaseView): a purchase as
 * its owner reads it, a page of them, and what the provider's event route answers.
 */
import { cursorPage, nullableStr, nullableTime, obj, record, str, time, usd, uuid, type JsonSchema } from '../schemas/common.ts';
import { PURCHASE_EFFECTS, PURCHASE_STATUSES } from '../../storage/db/purchases.ts';

export const purchase: JsonSchema = record({
  object: { const: 'purchase' },
  purchase_id: uuid,
  status: { enum: [...PURCHASE_STATUSES], description: 'pending until the payment provider confirms payment (paid), says it failed (failed) or the checkout expires (expired); refunded once refunded in full.' },
  amount_usd: { ...usd, description: 'What is bought, in US dollars (whole cents): the compute credited once paid.' },
  credited_usd: { ...usd, description: 'Compute this purchase added to the account (0 until the provider confirms payment).' },
  refunded_usd: { ...usd, description: 'What the provider refunded of the payment.' },
  recovered_usd: { ...usd, description: 'Compute taken back for the refund: what was left of the credit.' },
  unrecovered_usd: { ...usd, description: 'Refunded but not taken back, because it was already reserved or spent.' },
  checkout_url: { type: ['string', 'null'], format: 'uri', description: 'The payment provider\'s page where the purchase is paid (null once it has ended).' },
  provider: { const: 'stripe' },
  failure: nullableStr(1000),
  created_at: time,
  expires_at: { ...time, description: 'When an unpaid purchase expires with no credit.' },
  paid_at: nullableTime,
  ended_at: nullableTime,
});

export const purchasePage: JsonSchema = cursorPage(purchase);

/** POST /payment-events/stripe: what the service made of a verified event. */
export const paymentEventReceipt: JsonSchema = obj({
  object: { const: 'payment_event' },
  event_id: str(255),
  type: str(255),
  effect: { enum: [...PURCHASE_EFFECTS], description: 'What the event means for a purchase.' },
  purchase_id: { type: ['string', 'null'], format: 'uuid', description: 'The purchase it concerns; null when none does yet (a refund before its completion is held).' },
}, ['object', 'event_id', 'type', 'effect', 'purchase_id']);

import type Stripe from 'stripe';
import { CENT_MICROS } from '../../kernel/payments.ts';
import type { ProviderEvent, PurchaseEffect } from '../../storage/db/purchases.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The id of a field that Stripe gives as an id or, expanded, as the object. */
const idOf = (v: unknown): string | null => (typeof v === 'string' ? v : v && typeof v === 'object' && typeof (v as { id?: unknown }).id === 'string' ? (v as { id: string }).id : null);
const micros = (cents: unknown): number | null => (typeof cents === 'number' && Number.isInteger(cents) ? cents * CENT_MICROS : null);

/**
 * What a verified Stripe event means for a purchase. The checkout names its purchase
 * (client_reference_id, and metadata on the checkout and its payment); a refund names
 * the payment, which the completion recorded. A checkout completed but not yet paid (a
 * delayed payment method) waits for its async_payment event. Anything else, or another
 * currency, is kept and ignored.
 */
export function providerEvent(event: Stripe.Event): ProviderEvent {
  const o = event.data.object as unknown as Record<string, any>;
  const named = [o.client_reference_id, o.metadata?.purchase_id].find((v) => typeof v === 'string' && UUID.test(v)) ?? null;
  let effect: PurchaseEffect = 'ignored';
  let paymentId: string | null = null;
  let amountMicros: number | null = null;
  let refundedTotalMicros: number | null = null;
  let failure: string | null = null;
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded':
      effect = o.payment_status === 'paid' ? 'paid' : 'ignored';
      paymentId = idOf(o.payment_intent);
      amountMicros = micros(o.amount_total);
      break;
    case 'checkout.session.async_payment_failed':
      effect = 'failed';
      paymentId = idOf(o.payment_intent);
      failure = 'The payment provider reports that the payment failed.';
      break;
    case 'checkout.session.expired':
      effect = 'expired';
      break;
    case 'payment_intent.succeeded':
      effect = 'paid';
      paymentId = idOf(o);
      amountMicros = micros(o.amount_received);
      break;
    case 'payment_intent.payment_failed':
      effect = 'failed';
      paymentId = idOf(o);
      failure = `The payment failed: ${o.last_payment_error?.message ?? 'the provider gave no reason'}.`;
      break;
    case 'charge.refunded':
      effect = 'refunded';
      paymentId = idOf(o.payment_intent);
      refundedTotalMicros = micros(o.amount_refunded);
      break;
    default:
      break;
  }
  if (typeof o.currency === 'string' && o.currency.toLowerCase() !== 'usd') effect = 'ignored';
  return { id: event.id, type: event.type, effect, purchaseId: named, paymentId, amountMicros, refundedTotalMicros, object: o, failure };
}

import type Stripe from 'stripe';
import getRawBody from 'raw-body';
import type { ToolDef } from '../tools/tool.ts';
import { cursor, limit, obj, uuid } from '../schemas/common.ts';
import { ApiError, errors } from '../errors.ts';
import { decodeCursor, pageBody } from '../pagination.ts';
import { acceptAndStart } from '../acceptAndStart.ts';
import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { keyedUuid } from '../../storage/ids.ts';
import { DependencyUnavailable } from '../../storage/dependencies.ts';
import { CENT_MICROS } from '../../kernel/payments.ts';
import type { PaymentsConfig } from '../../kernel/config.ts';
import { CONTROL_TASK_QUEUE, purchaseWorkflowId } from '../../kernel/workflowNames.ts';
import { createPurchase, discardPurchase, getPurchase, listPurchases, PURCHASE_STATUSES, recordProviderEvent, setCheckout, type PurchaseRow } from '../../storage/db/purchases.ts';
import { purchaseEventSignal, purchaseWorkflow } from '../../workflows/purchase.ts';
import { paymentEventReceipt, purchase, purchasePage } from './schemas.ts';
import { purchaseView } from './view.ts';
import { providerEvent } from './providerEvents.ts';

/** The bounds of one purchase, in cents. */
export const PURCHASE_MIN_CENTS = 500;
export const PURCHASE_MAX_CENTS = 1_000_000;
/** The largest provider event the route reads (Stripe's are a few kB). */
const EVENT_MAX_BYTES = 1024 * 1024;

/** The provider's client, or the 501 of a server where buying is not configured (`what` it lacks). */
function configured<T>(value: T | null, what: string): T {
  if (!value) throw new ApiError(501, 'payments_not_configured', `Buying compute is not configured on this server (no ${what}); ask its operator for a grant.`, null, { retryable: false });
  return value;
}

const dollars = (cents: number) => `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

/** Whole cents of an amount in US dollars within the bounds, or the 422 that names them. */
function centsOf(usd: number): number {
  const cents = Math.round(usd * 100);
  if (Math.abs(cents - usd * 100) > 1e-6 || cents < PURCHASE_MIN_CENTS || cents > PURCHASE_MAX_CENTS) {
    throw errors.validation('parameter_out_of_range', `amount_usd must be from ${dollars(PURCHASE_MIN_CENTS)} to ${dollars(PURCHASE_MAX_CENTS)} in whole cents; got ${usd}.`, 'amount_usd', {
      minimum_usd: PURCHASE_MIN_CENTS / 100, maximum_usd: PURCHASE_MAX_CENTS / 100,
    });
  }
  return cents;
}

export const purchaseTools: ToolDef[] = [
  {
    name: 'purchase_create', scope: 'compute:buy', readOnly: false,
    description: `Buy compute: a checkout with the payment provider for an amount in US dollars (${dollars(PURCHASE_MIN_CENTS)} to ${dollars(PURCHASE_MAX_CENTS)}, whole cents). Answers the purchase with the URL where it is paid; the compute is credited only when the provider confirms payment. Not an MCP tool: an agent never spends a person's money.`,
    input: { body: obj({ amount_usd: { type: 'number', description: `US dollars, ${dollars(PURCHASE_MIN_CENTS)} to ${dollars(PURCHASE_MAX_CENTS)} in whole cents.` } }, ['amount_usd']) },
    output: purchase,
  },
  {
    name: 'purchase_get', scope: 'compute:buy', readOnly: true, description: 'Read one purchase: pending, paid, failed, refunded or expired, and what it credited and took back.',
    input: { path: { purchase_id: uuid } }, output: purchase,
  },
  {
    name: 'purchase_list', scope: 'compute:buy', readOnly: true, description: 'List the account\'s purchases, newest first.',
    input: { query: { status: { enum: [...PURCHASE_STATUSES, null] }, limit, cursor } }, output: purchasePage,
  },
  {
    name: 'payment_event_receive', scope: 'any', readOnly: false, idempotent: true,
    description: 'The payment provider\'s signed events (Stripe: checkout completed, payment succeeded or failed, refunded). Authenticated by the Stripe-Signature header over the raw body, not by an API key; an event is applied once, however often it is sent.',
    input: {}, output: paymentEventReceipt,
  },
];

/** How a purchase's workflow starts (when it is not open already). */
function purchaseStart(baseUrl: string, p: Pick<PurchaseRow, 'id' | 'account_id' | 'amount_micros'>) {
  return {
    workflowId: purchaseWorkflowId(p.id), taskQueue: CONTROL_TASK_QUEUE, args: [{ purchaseId: p.id }] as [{ purchaseId: string }],
    ...workflowMetadata(baseUrl, {
      attributes: { account: p.account_id, kind: 'purchase' },
      summary: `purchase of $${microsToUsd(p.amount_micros)} of compute for ${p.account_id}`,
      facts: [`Purchase ${p.id} of account ${p.account_id}: credited once its payment completes, ended if it fails or expires.`],
      resource: `/purchases/${p.id}`,
    }),
  };
}

const HANDLERS: Record<string, ToolDef['handler']> = {
  async purchase_create(input, ctx) {
    const provider = configured(ctx.deps.payments, 'payment provider key');
    const cents = centsOf(input.amount_usd);
    const { db, config } = ctx.deps;
    const account = ctx.caller.account;
    // The id comes from the Idempotency-Key: a retry finds what an earlier attempt recorded.
    const id = keyedUuid(account.id, 'purchase_create', ctx.idempotencyKey!);
    const expiry = config.payments.purchaseExpirySeconds;
    const expiresAt = new Date(Date.now() + expiry * 1000);
    const p = await acceptAndStart(ctx.deps.temporal, {
      async record() {
        const row = await createPurchase(db, { id, account_id: account.id, key_id: ctx.caller.key.id, amount_micros: cents * CENT_MICROS, expires_at: expiresAt });
        if (row.checkout_id) return row;
        try {
          const checkout = await checkoutFor(provider, row, cents, account.namespace, config.payments);
          return await setCheckout(db, id, checkout);
        } catch (err) {
          await discardPurchase(db, id);
          throw err;
        }
      },
      workflow: purchaseWorkflow,
      start: (r) => purchaseStart(config.baseUrl, r),
      undo: (r) => discardPurchase(db, r.id),
    });
    return { body: purchaseView(p) };
  },
  async purchase_get(input, ctx) {
    const p = await getPurchase(ctx.deps.db, ctx.caller.account.id, input.purchase_id);
    if (!p) throw errors.notFound('purchase_not_found', 'purchase', 'purchase_id');
    return { body: purchaseView(p) };
  },
  async purchase_list(input, ctx) {
    const page = await listPurchases(ctx.deps.db, ctx.caller.account.id, { limit: input.limit ?? ctx.deps.config.limits.pageDefault, after: decodeCursor(input.cursor, ['text', 'text']), status: input.status ?? undefined });
    return { body: pageBody(page, page.rows.map(purchaseView)) };
  },
  async payment_event_receive(_input, ctx) {
    const provider = configured(ctx.deps.payments, 'payment provider key');
    const secret = configured(ctx.deps.config.payments.stripeWebhookSecret, 'signing secret for the payment provider\'s events');
    const request = ctx.http!.request!;
    // Verified over the bytes exactly as sent: a re-serialised body would not verify.
    const raw = await getRawBody(request, { limit: EVENT_MAX_BYTES }).catch((err: { type?: string }) => {
      throw err.type === 'entity.too.large' ? errors.payloadTooLarge(EVENT_MAX_BYTES) : errors.invalidRequest('The event body could not be read.');
    });
    let event: Stripe.Event;
    try {
      event = provider.webhooks.constructEvent(raw, request.headers['stripe-signature'] ?? '', secret);
    } catch {
      throw new ApiError(400, 'signature_invalid', 'The Stripe-Signature header does not verify this body with the configured signing secret (or is too old).', 'Stripe-Signature');
    }
    const ev = providerEvent(event);
    const { purchase } = await recordProviderEvent(ctx.deps.db, ev);
    // Signalled every time, also for an event kept before: the workflow applies only what is new.
    if (purchase) await ctx.deps.temporal.signalWithStart(purchaseWorkflow, purchaseEventSignal, [ev.id], purchaseStart(ctx.deps.config.baseUrl, purchase));
    return { body: { object: 'payment_event', event_id: ev.id, type: ev.type, effect: ev.effect, purchase_id: purchase?.id ?? null } };
  },
};

/** The provider's checkout for a purchase, made once per purchase (the purchase id is its idempotency key). */
async function checkoutFor(provider: Stripe, p: PurchaseRow, cents: number, namespace: string, cfg: PaymentsConfig): Promise<{ id: string; url: string }> {
  const back = `${cfg.returnUrl}${cfg.returnUrl.includes('?') ? '&' : '?'}purchase=${p.id}`;
  const seconds = Math.round((new Date(p.expires_at).getTime() - Date.now()) / 1000);
  try {
    const session = await provider.checkout.sessions.create({
      mode: 'payment',
      client_reference_id: p.id,
      metadata: { purchase_id: p.id, account: namespace },
      payment_intent_data: { metadata: { purchase_id: p.id, account: namespace } },
      line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: cents, product_data: { name: 'Silico compute', description: `${dollars(cents)} of compute for ${namespace}` } } }],
      success_url: back,
      cancel_url: back,
      // The provider's checkout lasts from 30 minutes to a day; a shorter expiry is ours alone.
      ...(seconds >= 1800 && seconds <= 86_400 ? { expires_at: Math.floor(new Date(p.expires_at).getTime() / 1000) } : {}),
    }, { idempotencyKey: `purchase-${p.id}` });
    if (!session.url) throw new Error('the checkout has no URL');
    return { id: session.id, url: session.url };
  } catch (err) {
    // The provider down, failing or pacing us: 503, and the retry (same key) completes it.
    if (['StripeConnectionError', 'StripeAPIError', 'StripeRateLimitError'].includes((err as { type?: string }).type ?? '')) throw new DependencyUnavailable('payment_provider', err);
    throw err;
  }
}

for (const t of purchaseTools) t.handler = HANDLERS[t.name];


import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Stripe from 'stripe';
import { withoutRequestId, BASE_URL, call, closeTestDb, errorOf, newAccount, silicoCli, spawnApi, testDb, until } from '../helpers.ts';
import { KEY_SCOPES, SCOPES } from '../../storage/db/apiKeys.ts';
import { reserveCompute } from '../../storage/ledger.ts';
import { auditLedger } from '../../storage/db/audit.ts';
import { applyPurchaseEvents, recordProviderEvent, type ProviderEvent } from '../../storage/db/purchases.ts';
import { mcpClients } from '../mcpClients.ts';
import { operatorView } from '../operatorView.ts';
import { purchaseWorkflowId } from '../../kernel/workflowNames.ts';

// Buying compute on the real stack, with the payment provider's own mock server
// (stripe-mock) behind the checkouts. That server sends no events, so this file signs
// them as the provider would, with its library's test-header helper, over the exact bytes
// it sends: pretty-printed JSON, so a route that re-serialised the body would not verify.

after(closeTestDb);
const SECRET = process.env.SILICO_STRIPE_WEBHOOK_SECRET!;
const stripe = new Stripe('sk_test_unused');
let buyer: Awaited<ReturnType<typeof newAccount>>;
before(async () => {
  buyer = await newAccount({ scopes: KEY_SCOPES });
});

/** Posts a provider event as Stripe sends one: its bytes and their signature (a tampered copy when told). */
async function send(event: Record<string, unknown>, opts: { secret?: string; tamper?: (body: string) => string; timestamp?: number } = {}) {
  const payload = JSON.stringify(event, null, 2);
  const header = stripe.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? SECRET, ...(opts.timestamp ? { timestamp: opts.timestamp } : {}) });
  const res = await fetch(`${BASE_URL}/payment-events/stripe`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Stripe-Signature': header }, body: opts.tamper ? opts.tamper(payload) : payload });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

let n = 0;
const eventId = () => `evt_test_${process.pid}_${Date.now()}_${n++}`;

/** The provider's "checkout completed" for a purchase, paid with `paymentId`. */
async function completion(purchaseId: string, paymentId: string, cents: number): Promise<Record<string, unknown>> {
  const p = await testDb()('purchases').where({ id: purchaseId }).first('checkout_id');
  return {
    id: eventId(), object: 'event', type: 'checkout.session.completed', api_version: '2025-10-29', created: Math.floor(Date.now() / 1000), livemode: false,
    data: { object: {
      id: p.checkout_id, object: 'checkout.session', client_reference_id: purchaseId, metadata: { purchase_id: purchaseId },
      payment_status: 'paid', status: 'complete', payment_intent: paymentId, amount_total: cents, currency: 'usd',
    } },
  };
}

/** The provider's "charge refunded": `refundedCents` in all so far on the payment (no purchase named: the payment says which). */
const refund = (paymentId: string, refundedCents: number) => ({
  id: eventId(), object: 'event', type: 'charge.refunded', api_version: '2025-10-29', created: Math.floor(Date.now() / 1000), livemode: false,
  data: { object: { id: `ch_${paymentId}`, object: 'charge', payment_intent: paymentId, amount: 2000, amount_refunded: refundedCents, refunded: true, currency: 'usd' } },
});

const available = async (key: string) => (await call('GET', '/account', { key })).body.holdings.compute.available_usd as number;
const purchase = async (key: string, id: string) => (await call('GET', `/purchases/${id}`, { key })).body;
const buy = (key: string, amount: unknown, base?: string) => call('POST', '/purchases', { key, body: { amount_usd: amount }, headers: { 'Idempotency-Key': crypto.randomUUID() }, ...(base ? { base } : {}) });
const settled = (key: string, id: string, status: string) => until(20_000, async () => {
  const p = await purchase(key, id);
  return p.status === status ? p : undefined;
});

test('a purchase opens a checkout with the provider and credits nothing yet; amounts outside $5-$10,000 in whole cents are 422 naming the bounds; buying needs its own scope, is never an MCP tool, and another account\'s purchase is not found', async () => {
  const before = await available(buyer.key);
  const res = await buy(buyer.key, 20);
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.status, 'pending');
  assert.equal(res.body.amount_usd, 20);
  assert.equal(res.body.credited_usd, 0);
  assert.match(res.body.checkout_url, /^https:\/\/checkout\.stripe\.com\//, 'the provider\'s checkout page');
  const row = await testDb()('purchases').where({ id: res.body.purchase_id }).first();
  assert.match(row.checkout_id, /^cs_/, 'a checkout the provider (its mock server) made');
  assert.equal(await available(buyer.key), before, 'no credit on the checkout\'s creation');
  assert.deepEqual(withoutRequestId(await purchase(buyer.key, res.body.purchase_id)), withoutRequestId(res.body), 'GET reads what POST answered');

  for (const amount of [4.99, 10_000.01, 20.005, 0, -5]) {
    const bad = await buy(buyer.key, amount);
    assert.equal(bad.status, 422, `${amount}: ${bad.text}`);
    assert.equal(errorOf(bad).code, 'parameter_out_of_range');
    assert.equal(errorOf(bad).param, 'amount_usd');
    assert.match(errorOf(bad).message, /from \$5\.00 to \$10,000\.00 in whole cents/);
  }
  assert.equal((await buy(buyer.key, 10_000)).status, 201, 'the upper bound itself');
  assert.equal((await buy(buyer.key, 5)).status, 201, 'the lower bound itself');

  const noScope = await newAccount({ scopes: SCOPES });
  const refused = await buy(noScope.key, 20);
  assert.equal(refused.status, 403);
  assert.equal(errorOf(refused).code, 'insufficient_scope');
  const missing = await call('GET', `/purchases/${res.body.purchase_id}`, { key: (await newAccount({ scopes: KEY_SCOPES })).key });
  assert.equal(missing.status, 404);
  assert.equal(errorOf(missing).code, 'purchase_not_found');

  const { http } = mcpClients();
  const { tools } = await (await http(buyer.key)).listTools();
  assert.deepEqual(tools.filter((t) => /purchase|payment/.test(t.name)).map((t) => t.name), [], 'no MCP tool buys (or reads purchases)');
});

test('a signed completion sent three times at once credits once; the credit appears only after it; a replay later changes nothing', async () => {
  const before = await available(buyer.key);
  const p = (await buy(buyer.key, 20)).body;
  const event = await completion(p.purchase_id, `pi_${crypto.randomUUID().slice(0, 8)}`, 2000);
  const answers = await Promise.all([send(event), send(event), send(event)]);
  for (const a of answers) {
    assert.equal(a.status, 200, a.text);
    assert.deepEqual({ effect: a.body.effect, purchase_id: a.body.purchase_id, event_id: a.body.event_id }, { effect: 'paid', purchase_id: p.purchase_id, event_id: event.id });
  }
  const paid = await settled(buyer.key, p.purchase_id, 'paid');
  assert.equal(paid.credited_usd, 20);
  assert.equal(paid.checkout_url, null, 'nothing left to pay');
  assert.equal(await available(buyer.key), before + 20);
  assert.equal((await send(event)).status, 200, 'a replay is answered');
  // The same payment confirmed by its other event, too: still one credit.
  assert.equal((await send({ ...event, id: eventId(), type: 'payment_intent.succeeded', data: { object: { id: (event.data as any).object.payment_intent, object: 'payment_intent', amount_received: 2000, currency: 'usd', metadata: { purchase_id: p.purchase_id } } } })).status, 200);
  await until(20_000, async () => ((await testDb()('purchase_events').where({ purchase_id: p.purchase_id }).whereNull('applied_at')).length === 0 ? true : undefined));
  assert.equal(await available(buyer.key), before + 20);
  assert.equal((await testDb()('ledger_txns').where({ kind: 'purchase', ref: `purchase:${p.purchase_id}` })).length, 1);
  // What an operator reads of its workflow (the latest run: a later event starts one anew).
  const seen = await operatorView(purchaseWorkflowId(p.purchase_id), { state: true });
  assert.equal(seen.summary, `purchase of $20 of compute for ${buyer.account.id}`);
  assert.match(seen.details!, new RegExp(`^Purchase ${p.purchase_id} of account ${buyer.account.id}: .*\\[API\\]\\(${BASE_URL}/purchases/${p.purchase_id}\\)$`, 's'));
  assert.deepEqual({ ...seen.state, event_batches_applied: undefined }, { object: 'purchase', purchase_id: p.purchase_id, status: 'paid', expires_at: p.expires_at, event_batches_applied: undefined });
  assert.match(seen.current!, /^\*\*paid\*\*\.\n\n\d+ signalled event batches applied\.$/);
  const audit = await auditLedger(testDb(), [buyer.account.id]);
  assert.deepEqual(Object.values(audit.problems).filter((v) => v > 0), [], JSON.stringify(audit.problems));
  assert.ok(audit.purchases.paid >= 1 && audit.purchases.paid === audit.purchases.credited);
});

test('a tampered, wrongly signed or stale event is 400 signature_invalid and recorded nowhere', async () => {
  const p = (await buy(buyer.key, 25)).body;
  const event = await completion(p.purchase_id, 'pi_tampered', 2500);
  const cases = [
    await send(event, { tamper: (b) => b.replace('"amount_total": 2500', '"amount_total": 250000') }),
    await send(event, { tamper: (b) => JSON.stringify(JSON.parse(b)) }),
    await send(event, { secret: 'whsec_not_the_one' }),
    await send(event, { timestamp: Math.floor(Date.now() / 1000) - 3600 }),
  ];
  for (const res of cases) {
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'signature_invalid');
  }
  const unsigned = await fetch(`${BASE_URL}/payment-events/stripe`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(event) });
  assert.equal(unsigned.status, 400);
  assert.equal((await testDb()('purchase_events').where({ id: event.id })).length, 0, 'recorded nowhere');
  assert.equal((await purchase(buyer.key, p.purchase_id)).status, 'pending');
});

test('a refund takes back what is left of the credit and records what it could not (already reserved); a refund before its completion is held until the completion comes', async () => {
  const p = (await buy(buyer.key, 20)).body;
  const paymentId = `pi_${crypto.randomUUID().slice(0, 8)}`;
  await send(await completion(p.purchase_id, paymentId, 2000));
  await settled(buyer.key, p.purchase_id, 'paid');
  // Most of the account's compute held by a run's reservation, as a run would take it.
  const spare = Math.round((await available(buyer.key)) * 1e6);
  assert.ok(await reserveCompute(testDb(), buyer.account.id, spare - 5_000_000, `run:test-${crypto.randomUUID()}`));
  assert.equal(await available(buyer.key), 5);
  const res = await send(refund(paymentId, 2000));
  assert.equal(res.body.effect, 'refunded');
  const refunded = await settled(buyer.key, p.purchase_id, 'refunded');
  assert.deepEqual([refunded.refunded_usd, refunded.recovered_usd, refunded.unrecovered_usd, refunded.credited_usd], [20, 5, 15, 20]);
  assert.equal(await available(buyer.key), 0, 'what was available was taken back; the reservation untouched');

  // The other order: the refund first (it names only the payment), then the completion.
  const q = (await buy(buyer.key, 30)).body;
  const held = `pi_${crypto.randomUUID().slice(0, 8)}`;
  const early = await send(refund(held, 1000));
  assert.equal(early.status, 200, early.text);
  assert.equal(early.body.purchase_id, null, 'no purchase knows that payment yet: held');
  assert.equal((await purchase(buyer.key, q.purchase_id)).status, 'pending');
  await send(await completion(q.purchase_id, held, 3000));
  const partly = await until(20_000, async () => {
    const x = await purchase(buyer.key, q.purchase_id);
    return x.status === 'paid' && x.refunded_usd === 10 ? x : undefined;
  });
  assert.deepEqual([partly.credited_usd, partly.refunded_usd, partly.recovered_usd], [30, 10, 10], 'credited, then the held partial refund applied');
  assert.equal(await available(buyer.key), 20);
  const audit = await auditLedger(testDb(), [buyer.account.id]);
  assert.deepEqual(Object.values(audit.problems).filter((v) => v > 0), [], JSON.stringify(audit.problems));
  assert.ok(audit.purchases.refunds >= 2);
});

test('a refund recorded while its completion is applied is taken in: the payment\'s lock keeps the refund\'s recording and the completion from interleaving', async () => {
  const db = testDb();
  const p = (await buy(buyer.key, 20)).body;
  const paymentId = `pi_${crypto.randomUUID().slice(0, 8)}`;
  await recordProviderEvent(db, { id: eventId(), type: 'checkout.session.completed', effect: 'paid', purchaseId: p.purchase_id, paymentId, amountMicros: 20_000_000, refundedTotalMicros: null, object: {} });
  const refundEvent: ProviderEvent = { id: eventId(), type: 'charge.refunded', effect: 'refunded', purchaseId: null, paymentId, amountMicros: null, refundedTotalMicros: 5_000_000, object: {} };
  // Another transaction holds the refund's id, so its recording waits at its insert, after
  // looking for the payment's purchase: none has it before the completion commits.
  const holder = await db.transaction();
  let recording: ReturnType<typeof recordProviderEvent> | undefined;
  let applying: Promise<unknown> | undefined;
  try {
    const { rows: [{ pid }] } = await holder.raw('SELECT pg_backend_pid() AS pid');
    await holder('purchase_events').insert({ id: refundEvent.id, type: 'held', effect: 'ignored', object: '{}' });
    recording = recordProviderEvent(db, refundEvent);
    await until(10_000, async () => ((await db.raw('SELECT count(*)::integer AS n FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [pid])).rows[0].n > 0 ? true : undefined));
    // The completion applied meanwhile: it ends, or waits for the refund's recording.
    let applied = false;
    applying = applyPurchaseEvents(db, p.purchase_id).then(() => { applied = true; });
    await until(10_000, async () => (applied || (await db.raw("SELECT count(*)::integer AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rows[0].n > 0 ? true : undefined));
  } finally {
    await holder.rollback();
  }
  const recorded = await recording!;
  await applying;
  // A refund that found its purchase is applied on the signal the route sends.
  if (recorded.purchase) await applyPurchaseEvents(db, p.purchase_id);
  const row = await db('purchases').where({ id: p.purchase_id }).first('status', 'credited_micros', 'refunded_micros');
  assert.deepEqual([row.status, Number(row.credited_micros), Number(row.refunded_micros)], ['paid', 20_000_000, 5_000_000], 'credited, and the refund taken in, not held');
});

test('a payment the provider reports failed ends the purchase failed, saying so, with no credit; a completion of another currency is ignored', async () => {
  const before = await available(buyer.key);
  const p = (await buy(buyer.key, 12)).body;
  const odd = await completion(p.purchase_id, 'pi_euro', 1200);
  (odd.data as any).object.currency = 'eur';
  assert.equal((await send(odd)).body.effect, 'ignored');
  const res = await send({
    id: eventId(), object: 'event', type: 'checkout.session.async_payment_failed', created: Math.floor(Date.now() / 1000), livemode: false,
    data: { object: { object: 'checkout.session', client_reference_id: p.purchase_id, metadata: { purchase_id: p.purchase_id }, payment_status: 'unpaid', payment_intent: 'pi_failed', currency: 'usd' } },
  });
  assert.equal(res.body.effect, 'failed');
  const failed = await settled(buyer.key, p.purchase_id, 'failed');
  assert.match(failed.failure, /payment failed/);
  assert.equal(failed.credited_usd, 0);
  assert.equal(await available(buyer.key), before);
});

test('a purchase whose event never comes expires with no credit (an api whose purchases expire in 2 s)', async () => {
  const api = await spawnApi({ SILICO_PURCHASE_EXPIRY_SECONDS: '2' });
  try {
    const who = await newAccount({ scopes: KEY_SCOPES });
    const res = await buy(who.key, 15, api.base);
    assert.equal(res.status, 201, res.text);
    const expired = await settled(who.key, res.body.purchase_id, 'expired');
    assert.equal(expired.credited_usd, 0);
    assert.equal(expired.checkout_url, null);
    assert.ok(expired.ended_at);
    assert.equal(await available(who.key), 0);
  } finally {
    await api.stop();
  }
});

test('`silico buy 20` prints where to pay, waits for the confirmation, then prints the credit and the balance', { timeout: 60_000 }, async () => {
  const who = await newAccount({ scopes: KEY_SCOPES, usd: 1 });
  let signed: Promise<unknown> | undefined;
  const res = await silicoCli(['buy', '20', '--poll-ms', '200'], {
    key: who.key, configDir: mkdtempSync(path.join(os.tmpdir(), 'silico-buy-')),
    onStdout: (out) => {
      const m = /purchase {2}([0-9a-f-]{36}):/.exec(out);
      if (m && !signed) signed = (async () => send(await completion(m[1]!, `pi_${crypto.randomUUID().slice(0, 8)}`, 2000)))();
    },
  });
  assert.equal(res.code, 0, res.stderr + res.stdout);
  assert.match(res.stdout, /^checkout {2}https:\/\/checkout\.stripe\.com\/\S+$/m);
  assert.match(res.stdout, /^paid {6}\$20\.00 credited; available now \$21\.00$/m);
  assert.equal(await available(who.key), 21);
});

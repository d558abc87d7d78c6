import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import Stripe from 'stripe';
import type { Answer, SoakClient } from './client.ts';
import type { SoakAccount, SoakSetup } from './setup.ts';

/** The built-in labs the runs rotate through (each finishes in a few seconds). */
const LABS = ['microbial-growth', 'sir-epidemic', 'predator-prey', 'enzyme-kinetics', 'gene-toggle-switch'].map((n) => `platform/${n}@1.0.0`);
const RUN_TERMINAL = ['completed', 'failed', 'cancelled', 'timed_out'];
const INVOCATION_TERMINAL = ['completed', 'failed', 'cancelled', 'expired'];

/** What the traffic was told it did: the audit holds the state of record to it. */
export interface Effects {
  /** Each keyed run write (its Idempotency-Key, sent also as metadata.soak_op) and the run it was answered with. */
  runs: Map<string, string>;
  studies: string[];
  invocations: string[];
  files: Array<{ id: string; sha256: string }>;
  /** Purchases whose completion the provider's route took, with what was refunded of each (cents). */
  purchases: Array<{ id: string; cents: number; refundedCents: number }>;
  /** Downloads (artifacts, files) whose bytes did not hash to what the record says. */
  downloadsDiffer: string[];
  /** Writes answered with something other than their success and the retryable answers (a 4xx the flow did not expect). */
  refused: string[];
}

export function newEffects(): Effects {
  return { runs: new Map(), studies: [], invocations: [], files: [], purchases: [], downloadsDiffer: [], refused: [] };
}

const hex = (digest: string) => digest.replace(/^sha256:/, '');
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/**
 * The record a plan-bound write made: its answer's `id`, or, when a retry of a write whose
 * answer was cut finds its plan used, the result that 409 `plan_unavailable` names (one
 * approval makes one result, and the answer says which).
 */
function madeBy(a: Answer, success: number, idField: string): string | null {
  if (a.status === success) return a.body[idField] as string;
  const ref = a.status === 409 && a.body?.error?.code === 'plan_unavailable' ? a.body.error.details?.result_ref : null;
  return typeof ref === 'string' ? ref.slice(ref.indexOf(':') + 1) : null;
}

/** How long a flow follows a record to its end. */
const FOLLOW_MS = 300_000;

/** Reads `route` every `ms` until `done` says the body is final (null when a read was given up, or the record did not end in FOLLOW_MS). */
async function until(client: SoakClient, op: string, route: string, key: string, done: (body: any) => boolean, ms = 1000): Promise<any> {
  // Bounded, so a record that never ends fails the audit (open work) instead of hanging the soak.
  for (const deadline = Date.now() + FOLLOW_MS; Date.now() < deadline; await sleep(ms)) {
    const r = await client.request(op, 'GET', route, { key });
    if (!r) return null;
    if (r.status === 200 && done(r.body)) return r.body;
  }
  return null;
}

/** A run of a built-in lab, followed to its end; one public artifact downloaded and verified. */
async function runFlow(client: SoakClient, a: SoakAccount, e: Effects, i: number): Promise<void> {
  const op = randomUUID();
  const made = await client.request('run_create', 'POST', '/runs', { key: a.key, idempotencyKey: op, body: { ref: LABS[i % LABS.length], inputs: {}, max_runtime_seconds: 120, metadata: { soak_op: op } } });
  if (!made) return;
  if (made.status !== 200) return void e.refused.push(`run_create ${made.status} ${made.body?.error?.code}`);
  e.runs.set(op, made.body.id);
  const ended = await until(client, 'run_get', `/runs/${made.body.id}`, a.key, (r) => RUN_TERMINAL.includes(r.status));
  if (ended?.status !== 'completed') return;
  const results = await client.request('run_results', 'GET', `/runs/${made.body.id}/results`, { key: a.key });
  const artifact = results?.body?.artifacts?.find((x: any) => x.download_url);
  if (!artifact) return;
  const got = await client.request('artifact_download', 'GET', `/runs/${made.body.id}/artifacts/${artifact.id}`, { key: a.key, bytes: true });
  if (got?.status === 200 && sha256(got.bytes!) !== hex(artifact.sha256)) e.downloadsDiffer.push(`run ${made.body.id} artifact ${artifact.id}`);
}

/** A small study (two arms, one run each) on the owner's workspace, followed to its end. */
async function studyFlow(client: SoakClient, s: SoakSetup, e: Effects, i: number): Promise<void> {
  const arm = (label: string, growth: number) => ({ label, workspace_id: s.lab.workspaceId, revision_id: s.lab.revisionId, inputs: { growth_rate: growth }, replicates: 1, seed: i, max_runtime_seconds: 60 });
  const plan = await client.request('experiment_prepare', 'POST', '/experiment-plans', { key: s.owner.key, idempotencyKey: randomUUID(), body: { name: `Soak study ${i}`, arms: [arm('slow', 0.1), arm('fast', 0.3)] } });
  if (!plan) return;
  if (plan.status !== 200 || plan.body.status !== 'ready') return void e.refused.push(`experiment_prepare ${plan.status} ${plan.body?.error?.code ?? plan.body?.status}`);
  const made = await client.request('experiment_create', 'POST', '/experiments', { key: s.owner.key, idempotencyKey: randomUUID(), body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  if (!made) return;
  const id = madeBy(made, 200, 'id');
  if (!id) return void e.refused.push(`experiment_create ${made.status} ${made.body?.error?.code}`);
  e.studies.push(id);
  await until(client, 'experiment_get', `/experiments/${id}`, s.owner.key, (x) => Boolean(x.completed_at), 2000);
}

/** A hosted invocation of the owner's private deployment, followed to its end. */
async function invocationFlow(client: SoakClient, s: SoakSetup, e: Effects, i: number): Promise<void> {
  const plan = await client.request('hosted_invocation_prepare', 'POST', '/hosted-invocation-plans', { key: s.owner.key, idempotencyKey: randomUUID(), body: { reference: s.lab.reference, sha256: s.lab.sha256, inputs: { growth_rate: 0.1 + (i % 10) / 50 } } });
  if (!plan) return;
  if (plan.status !== 201 || plan.body.status !== 'ready') return void e.refused.push(`hosted_invocation_prepare ${plan.status} ${plan.body?.error?.code ?? plan.body?.status}`);
  const made = await client.request('hosted_invocation_execute', 'POST', '/hosted-invocations', { key: s.owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  if (!made) return;
  const id = madeBy(made, 201, 'invocation_id');
  if (!id) return void e.refused.push(`hosted_invocation_execute ${made.status} ${made.body?.error?.code}`);
  e.invocations.push(id);
  await until(client, 'hosted_invocation_get', `/hosted-invocations/${id}`, s.owner.key, (x) => INVOCATION_TERMINAL.includes(x.status), 500);
}

/** An upload of fresh random bytes, downloaded back and verified. */
async function fileFlow(client: SoakClient, a: SoakAccount, e: Effects, i: number): Promise<void> {
  const bytes = randomBytes(32 * 1024 + (i % 7) * 1000);
  const made = await client.request('file_upload', 'POST', '/files', { key: a.key, form: () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), `soak-${i}.bin`);
    return form;
  } });
  if (!made) return;
  if (made.status !== 200) return void e.refused.push(`file_upload ${made.status} ${made.body?.error?.code}`);
  if (hex(made.body.sha256) !== sha256(bytes)) e.downloadsDiffer.push(`file ${made.body.file_id} recorded with another digest`);
  e.files.push({ id: made.body.file_id, sha256: sha256(bytes) });
  const got = await client.request('file_content', 'GET', `/files/${made.body.file_id}/content`, { key: a.key, bytes: true });
  if (got?.status === 200 && sha256(got.bytes!) !== sha256(bytes)) e.downloadsDiffer.push(`file ${made.body.file_id}`);
}

const stripe = new Stripe('sk_test_signing_only');

/** A provider event as Stripe sends it: pretty-printed bytes, signed anew at each attempt (as Stripe's retries are). */
const signed = (secret: string, event: Record<string, unknown>) => () => {
  const body = JSON.stringify(event, null, 2);
  return { body, headers: { 'Content-Type': 'application/json', 'Stripe-Signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret }) } };
};

/**
 * A purchase, paid as the provider would confirm it: the completion event (every other one
 * sent twice), and for every third a refund of half, then followed until it is credited.
 */
async function purchaseFlow(client: SoakClient, s: SoakSetup, e: Effects, i: number): Promise<void> {
  const cents = 500 + (i % 5) * 100;
  const made = await client.request('purchase_create', 'POST', '/purchases', { key: s.buyer.key, idempotencyKey: randomUUID(), body: { amount_usd: cents / 100 } });
  if (!made) return;
  if (made.status !== 201) return void e.refused.push(`purchase_create ${made.status} ${made.body?.error?.code}`);
  const id = made.body.purchase_id as string;
  const payment = `pi_soak_${id.slice(0, 8)}`;
  const event = (type: string, object: Record<string, unknown>) => ({ id: `evt_soak_${randomUUID()}`, object: 'event', type, created: Math.floor(Date.now() / 1000), livemode: false, data: { object } });
  const completed = event('checkout.session.completed', { object: 'checkout.session', client_reference_id: id, metadata: { purchase_id: id }, payment_status: 'paid', payment_intent: payment, amount_total: cents, currency: 'usd' });
  const send = (ev: Record<string, unknown>) => client.request('payment_event_receive', 'POST', '/payment-events/stripe', { key: '', raw: signed(s.paymentsSecret, ev) });
  const taken = await send(completed);
  if (!taken) return;
  if (taken.status !== 200) return void e.refused.push(`payment_event_receive ${taken.status} ${taken.body?.error?.code}`);
  if (i % 2 === 0) await send(completed);
  const refundedCents = i % 3 === 0 ? cents / 2 : 0;
  if (refundedCents) await send(event('charge.refunded', { object: 'charge', payment_intent: payment, amount: cents, amount_refunded: refundedCents, currency: 'usd' }));
  e.purchases.push({ id, cents, refundedCents });
  await until(client, 'purchase_get', `/purchases/${id}`, s.buyer.key, (p) => p.status === 'paid' && p.refunded_usd * 100 === refundedCents, 1000);
}

/** The reads a dashboard makes. */
async function readFlow(client: SoakClient, s: SoakSetup, i: number): Promise<void> {
  const routes = ['/account', '/runs?limit=5', '/capabilities', `/labs/${s.lab.labId}/hosting`, '/files?limit=5'];
  const route = routes[i % routes.length]!;
  await client.request(`read ${route.split('?')[0]!.replace(s.lab.labId, '{lab_id}')}`, 'GET', route, { key: i % routes.length === 3 ? s.owner.key : s.reader.key });
}

/**
 * The steady mix, each kind in its own loops until `stop` is set: four run loops, one
 * study, one invocation, one upload/download, one purchase and two read loops, each paced to leave
 * the two cores for the stack. Resolves once every flow in flight has finished.
 */
export async function drive(client: SoakClient, s: SoakSetup, e: Effects, stop: { set: boolean }): Promise<void> {
  const loop = async (pauseMs: number, flow: (i: number) => Promise<void>) => {
    for (let i = 0; !stop.set; i++) {
      await flow(i);
      await sleep(pauseMs);
    }
  };
  await Promise.all([
    ...Array.from({ length: 4 }, (_, k) => loop(1000, (i) => runFlow(client, s.runner, e, i * 4 + k))),
    loop(5000, (i) => studyFlow(client, s, e, i)),
    loop(1000, (i) => invocationFlow(client, s, e, i)),
    loop(1000, (i) => fileFlow(client, s.filer, e, i)),
    loop(3000, (i) => purchaseFlow(client, s, e, i)),
    loop(200, (i) => readFlow(client, s, i)),
    loop(200, (i) => readFlow(client, s, i + 2)),
  ]);
}

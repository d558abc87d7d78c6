/**
 * Signed webhooks on the real stack: a local receiver (allowed in the test configuration
 * only) gets each event signed; the check below is written from the published scheme
 * (`t=<unix>,v1=<hex HMAC-SHA256 of "<t>." + raw body>`), not from the service's code.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { verifyWebhook, WebhookSignatureError } from '../../sdk/src/index.ts';
import { admin, call, closeTestDb, errorOf, newAccount, silicoCli, spawnApi, testDb, until } from '../helpers.ts';
import { secretsKeyringOf } from '../../kernel/config.ts';
import { resealEndpointSecrets } from '../../storage/db/webhooks.ts';
import { operatorView } from '../operatorView.ts';
import { webhookDeliveryWorkflowId } from '../../kernel/workflowNames.ts';
import { Client, Connection } from '@temporalio/client';

interface Received { raw: string; headers: Record<string, string | string[] | undefined>; answered: number }

/** A receiver that answers each request with what `answer` says, recording everything. */
function receiver(answer: (n: number) => number = () => 200) {
  const received: Received[] = [];
  let server: Server;
  const url = new Promise<string>((resolve) => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const status = answer(received.length);
        received.push({ raw: Buffer.concat(chunks).toString('utf8'), headers: req.headers, answered: status });
        res.writeHead(status).end();
      });
    }).listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`));
  });
  return { url, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** The receiving side's check, from the scheme alone: any v1 matching, and t no older than 5 minutes. */
function verifies(raw: string, header: string, secret: string, now = Math.floor(Date.now() / 1000)): boolean {
  const parts = header.split(',').map((p) => p.split('=') as [string, string]);
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(now - t) > 300) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.${raw}`).digest('hex'));
  return parts.filter(([k]) => k === 'v1').some(([, v]) => v.length === expected.length && timingSafeEqual(Buffer.from(v), expected));
}

let owner: Awaited<ReturnType<typeof newAccount>>;
const receivers: Array<ReturnType<typeof receiver>> = [];

before(async () => {
  owner = await newAccount({ usd: 20 });
});
after(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await closeTestDb();
});

async function endpoint(key: string, url: string, events = ['run.completed']) {
  const res = await call('POST', '/webhook-endpoints', { key, body: { url, events } });
  assert.equal(res.status, 201, res.text);
  return res.body as { endpoint_id: string; secret: string };
}

async function completedRun(key: string): Promise<string> {
  const res = await call('POST', '/runs', { key, body: { ref: 'platform/microbial-growth', inputs: {} }, headers: { 'Idempotency-Key': crypto.randomUUID() } });
  assert.ok(res.status < 300, res.text);
  return res.body.id as string;
}

test('a completed run is delivered signed; the independent check verifies it, and fails on a changed body or an old timestamp', async () => {
  const r = receiver();
  receivers.push(r);
  const who = await newAccount({ usd: 5 });
  const ep = await endpoint(who.key, await r.url);
  assert.match(ep.secret, /^whsec_/);
  const runId = await completedRun(who.key);
  const got = await until(60_000, async () => r.received.find((x) => JSON.parse(x.raw).data.run_id === runId));
  const event = JSON.parse(got.raw);
  assert.equal(event.type, 'run.completed');
  assert.match(event.id, /^evt_/);
  assert.equal(got.headers['silico-event-id'], event.id);
  assert.equal(event.data.status, 'completed');
  assert.ok(!Number.isNaN(Date.parse(event.created_at)));
  const header = String(got.headers['silico-signature']);
  assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
  assert.equal(verifies(got.raw, header, ep.secret), true);
  assert.equal(verifies(got.raw.replace('"completed"', '"failed"'), header, ep.secret), false, 'a changed body fails');
  assert.equal(verifies(got.raw, header, 'whsec_someone_else'), false, 'another secret fails');
  const t = Number(/t=(\d+)/.exec(header)![1]);
  assert.equal(verifies(got.raw, header, ep.secret, t + 301), false, 'older than 5 minutes fails');
  // The delivery is recorded, and the event is in the account's event list. The receiver
  // has the body before the worker hears its answer and records the delivery: wait for that.
  const delivered = await until(30_000, async () => (await call('GET', '/webhook-deliveries?status=delivered', { key: who.key })).body.items
    .find((d: { event_id: string }) => d.event_id === event.id));
  assert.equal(delivered.attempts, 1);
  const events = await call('GET', '/webhook-events?type=run.completed', { key: who.key });
  assert.ok(events.body.items.some((e: { id: string }) => e.id === event.id));
});

test('signing secrets are sealed at rest: the database shows nothing of them, a sealed secret moved to another endpoint signs nothing, and one stored in plain is sealed at worker start and still signs', async () => {
  const r = receiver();
  receivers.push(r);
  const who = await newAccount({ usd: 5 });
  const ep = await endpoint(who.key, await r.url);
  const row = await testDb()('webhook_endpoints').where({ id: ep.endpoint_id }).first();
  assert.match(row.secret, /^sealed\.v1\.[0-9a-f]{16}\./);
  assert.ok(!JSON.stringify(row).includes(ep.secret.slice('whsec_'.length)), 'no trace of the secret in the row');

  // Another endpoint given this one's sealed secret (a database writer's swap) cannot sign with it.
  const other = receiver();
  receivers.push(other);
  const swapped = await endpoint(who.key, await other.url);
  await testDb()('webhook_endpoints').where({ id: swapped.endpoint_id }).update({ secret: row.secret });
  // A secret written in plain (as before sealing): read as it is, sealed by the worker's start step.
  const plain = 'whsec_written_in_plain_before_sealing';
  await testDb()('webhook_endpoints').where({ id: ep.endpoint_id }).update({ secret: plain });
  const ring = secretsKeyringOf(process.env)!;
  assert.ok(await resealEndpointSecrets(testDb(), ring) >= 1);
  assert.match((await testDb()('webhook_endpoints').where({ id: ep.endpoint_id }).first()).secret, new RegExp(`^sealed\\.v1\\.${ring.current.id}\\.`));

  const runId = await completedRun(who.key);
  const got = await until(60_000, async () => r.received.find((x) => JSON.parse(x.raw).data.run_id === runId));
  assert.equal(verifies(got.raw, String(got.headers['silico-signature']), plain), true, 'the resealed secret signs');
  const failed = await until(30_000, async () => {
    const d = (await call('GET', `/webhook-deliveries?endpoint_id=${swapped.endpoint_id}`, { key: who.key })).body.items[0];
    return d?.last_error ? d : undefined;
  });
  assert.equal(other.received.length, 0, 'nothing was sent with a secret that does not open on this endpoint');
  assert.equal(failed.status, 'pending');
  await call('DELETE', `/webhook-endpoints/${swapped.endpoint_id}`, { key: who.key });
});

test('an endpoint down for three attempts and then up receives the event exactly once', async () => {
  const r = receiver((n) => (n < 3 ? 503 : 200));
  receivers.push(r);
  const who = await newAccount({ usd: 5 });
  await endpoint(who.key, await r.url);
  const runId = await completedRun(who.key);
  const delivery = await until(30_000, async () => {
    const d = (await call('GET', '/webhook-deliveries', { key: who.key })).body.items[0];
    return d?.status === 'delivered' ? d : undefined;
  });
  assert.equal(delivery.attempts, 4);
  await new Promise((res) => setTimeout(res, 2500));
  assert.equal(r.received.length, 4, 'nothing is sent after the 2xx');
  assert.deepEqual(r.received.map((x) => x.answered), [503, 503, 503, 200]);
  const ids = new Set(r.received.map((x) => JSON.parse(x.raw).id));
  assert.equal(ids.size, 1, 'every attempt carries the same event id');
  assert.equal(r.received.filter((x) => x.answered === 200).length, 1);
  assert.equal(JSON.parse(r.received[3]!.raw).data.run_id, runId);

  // A dispatcher that read the delivery before another marked it dispatched (every worker
  // runs one) starts it once its workflow has completed: that start is a no-op, not a
  // second delivery. Made here by clearing the mark and waking the dispatchers.
  const db = testDb();
  await db('webhook_deliveries').where({ id: delivery.delivery_id }).update({ dispatched_at: null });
  await db.raw(`SELECT pg_notify('silico_webhook_deliveries', ?)`, [delivery.delivery_id]);
  await until(30_000, async () => ((await db('webhook_deliveries').where({ id: delivery.delivery_id }).first()).dispatched_at ? true : undefined));
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  try {
    const runs = [];
    for await (const w of new Client({ connection }).workflow.list({ query: `WorkflowId = '${webhookDeliveryWorkflowId(delivery.delivery_id, 1)}'` })) runs.push(w.runId);
    assert.equal(runs.length, 1, 'one workflow run of the delivery');
  } finally {
    await connection.close();
  }
  assert.equal(r.received.length, 4, 'nothing sent again');
  assert.equal((await db('webhook_deliveries').where({ id: delivery.delivery_id }).first()).attempts, 4);
});

test('during a secret rotation both signatures verify; after the overlap only the new one is sent', async () => {
  const r = receiver();
  receivers.push(r);
  const who = await newAccount({ usd: 5 });
  const ep = await endpoint(who.key, await r.url);
  const rotated = await call('POST', `/webhook-endpoints/${ep.endpoint_id}/secret-rotations`, { key: who.key, body: {} });
  assert.equal(rotated.status, 200, rotated.text);
  assert.notEqual(rotated.body.secret, ep.secret);
  assert.ok(rotated.body.previous_secret_expires_at);
  await completedRun(who.key);
  const got = await until(60_000, async () => r.received[0]);
  const header = String(got.headers['silico-signature']);
  assert.equal(header.split(',').filter((p) => p.startsWith('v1=')).length, 2);
  assert.equal(verifies(got.raw, header, rotated.body.secret), true, 'the new secret verifies');
  assert.equal(verifies(got.raw, header, ep.secret), true, 'the previous secret verifies during the overlap');

  const again = await call('POST', `/webhook-endpoints/${ep.endpoint_id}/secret-rotations`, { key: who.key, body: { overlap_seconds: 0 } });
  await completedRun(who.key);
  const next = await until(60_000, async () => r.received[1]);
  const h2 = String(next.headers['silico-signature']);
  assert.equal(h2.split(',').filter((p) => p.startsWith('v1=')).length, 1);
  assert.equal(verifies(next.raw, h2, again.body.secret), true);
  assert.equal(verifies(next.raw, h2, rotated.body.secret), false, 'the rotated-out secret no longer signs');
});

test('a delivery that never succeeds is dead-lettered after its retry window, listed, and delivered once replayed', async () => {
  let up = false;
  const r = receiver(() => (up ? 200 : 500));
  receivers.push(r);
  const who = await newAccount({ usd: 5 });
  await endpoint(who.key, await r.url, ['run.completed', 'run.failed']);
  await completedRun(who.key);
  const dead = await until(30_000, async () => {
    const d = (await call('GET', '/webhook-deliveries?status=dead', { key: who.key })).body.items[0];
    return d ?? undefined;
  });
  assert.ok(dead.attempts >= 3, `retried with backoff (${dead.attempts} attempts)`);
  assert.equal(dead.last_error, 'the endpoint answered 500');
  // What an operator reads of it in the Temporal UI: ids only (never the endpoint's URL or secret).
  const seen = await operatorView(webhookDeliveryWorkflowId(dead.delivery_id, 1), { state: true });
  assert.equal(seen.summary, `webhook delivery of ${dead.event_type} to endpoint ${dead.endpoint_id} for ${who.account.id}`);
  assert.equal(seen.current, `**Dead** after ${dead.attempts} attempts: the account can list and replay it.`);
  assert.deepEqual([seen.state!.status, seen.state!.attempt], ['dead', dead.attempts]);
  assert.ok(!`${seen.summary}${seen.details}`.includes(await r.url), 'no URL');
  const pendingReplay = await call('POST', `/webhook-deliveries/${dead.delivery_id}/replay`, { key: (await newAccount()).key });
  assert.equal(pendingReplay.status, 404, 'another account\'s delivery is not found');
  up = true;
  const replayed = await call('POST', `/webhook-deliveries/${dead.delivery_id}/replay`, { key: who.key });
  assert.equal(replayed.status, 200, replayed.text);
  assert.equal(replayed.body.status, 'pending');
  const delivered = await until(30_000, async () => {
    const d = (await call('GET', '/webhook-deliveries?status=delivered', { key: who.key })).body.items[0];
    return d ?? undefined;
  });
  assert.equal(delivered.delivery_id, dead.delivery_id);
  assert.equal(delivered.replays, 1);
  const accepted = r.received.filter((x) => x.answered === 200);
  assert.equal(accepted.length, 1);
  assert.equal(JSON.parse(accepted[0]!.raw).id, dead.event_id, 'the replay carries the same event id');
  const again = await call('POST', `/webhook-deliveries/${dead.delivery_id}/replay`, { key: who.key });
  assert.equal(again.status, 200, 'a delivered event may be replayed too');
});

test('only subscribed events are delivered; a removed endpoint gets nothing more; another account\'s endpoint answers like a missing one', async () => {
  const r = receiver();
  receivers.push(r);
  const who = await newAccount({ usd: 5 });
  const ep = await endpoint(who.key, await r.url, ['run.failed']);
  await completedRun(who.key);
  await until(60_000, async () => ((await call('GET', '/webhook-events?type=run.completed', { key: who.key })).body.items.length ? true : undefined));
  await new Promise((res) => setTimeout(res, 1000));
  assert.equal(r.received.length, 0, 'run.completed was not asked for');

  const stranger = await newAccount();
  for (const [method, path] of [['DELETE', `/webhook-endpoints/${ep.endpoint_id}`], ['POST', `/webhook-endpoints/${ep.endpoint_id}/secret-rotations`]] as const) {
    const res = await call(method, path, { key: stranger.key, body: method === 'POST' ? {} : undefined });
    assert.equal(res.status, 404);
    assert.equal(errorOf(res).code, 'webhook_endpoint_not_found');
  }
  const removed = await call('DELETE', `/webhook-endpoints/${ep.endpoint_id}`, { key: who.key });
  assert.equal(removed.status, 200, removed.text);
  assert.equal(removed.body.removed, true);
  assert.equal((await call('GET', '/webhook-endpoints', { key: who.key })).body.items.length, 0);
  assert.equal((await call('DELETE', `/webhook-endpoints/${ep.endpoint_id}`, { key: who.key })).status, 404);
});

test('outside the test configuration an endpoint must be public: loopback, private and .internal names are refused', async () => {
  const api = await spawnApi({ SILICO_WEBHOOK_ALLOW_PRIVATE: '0' });
  try {
    for (const url of ['http://127.0.0.1:8080/hook', 'http://10.1.2.3/hook', 'http://[::1]/hook', 'http://localhost/hook', 'http://metadata.google.internal/x', 'http://169.254.169.254/latest']) {
      const res = await call('POST', '/webhook-endpoints', { key: owner.key, base: api.base, body: { url, events: ['run.completed'] } });
      assert.equal(res.status, 422, `${url}: ${res.text}`);
      assert.deepEqual([errorOf(res).code, errorOf(res).param], ['url_not_public', 'url']);
    }
    const creds = await call('POST', '/webhook-endpoints', { key: owner.key, base: api.base, body: { url: 'https://user:pw@example.org/hook', events: ['run.completed'] } });
    assert.equal(errorOf(creds).param, 'url');
    const unknown = await call('POST', '/webhook-endpoints', { key: owner.key, base: api.base, body: { url: 'https://example.org/hook', events: ['run.exploded'] } });
    assert.equal(unknown.status, 422);
    assert.equal(errorOf(unknown).param, 'events[0]');
    const ok = await call('POST', '/webhook-endpoints', { key: owner.key, base: api.base, body: { url: 'https://example.org/hook', events: ['run.completed'] } });
    assert.equal(ok.status, 201, ok.text);
  } finally {
    await api.stop();
  }
});

test('npm run admin -- webhooks add|list|rotate-secret|remove manages the same endpoints', async () => {
  const who = await newAccount();
  const ns = who.account.namespace;
  const added = await admin('webhooks', 'add', '--account', ns, '--url', 'https://example.org/silico', '--events', 'run.completed,experiment.completed', '--json');
  assert.match(added.secret, /^whsec_/);
  assert.deepEqual(added.events, ['run.completed', 'experiment.completed']);
  const listed = await call('GET', '/webhook-endpoints', { key: who.key });
  assert.deepEqual(listed.body.items.map((e: { endpoint_id: string }) => e.endpoint_id), [added.endpoint_id]);
  assert.equal(listed.body.items[0].secret, undefined, 'a secret is never listed');
  const rotated = await admin('webhooks', 'rotate-secret', added.endpoint_id, '--account', ns, '--overlap-seconds', '60', '--json');
  assert.notEqual(rotated.secret, added.secret);
  assert.ok(rotated.previous_secret_expires_at);
  assert.equal((await admin('webhooks', 'list', '--account', ns, '--json')).length, 1);
  await admin('webhooks', 'remove', added.endpoint_id, '--account', ns, '--json');
  assert.equal((await admin('webhooks', 'list', '--account', ns, '--json')).length, 0);
});

test('the SDK\'s verifyWebhook() accepts a real delivery and refuses a changed body, an old timestamp and another secret', async () => {
  const r = receiver();
  receivers.push(r);
  const who = await newAccount({ usd: 5 });
  const ep = await endpoint(who.key, await r.url);
  const runId = await completedRun(who.key);
  const got = await until(60_000, async () => r.received[0]);
  const header = String(got.headers['silico-signature']);
  const event = verifyWebhook(got.raw, header, ep.secret);
  assert.equal(event.type, 'run.completed');
  assert.equal(event.data.run_id, runId);
  assert.deepEqual(verifyWebhook(Buffer.from(got.raw), header, ep.secret), event, 'bytes as received verify too');
  assert.throws(() => verifyWebhook(got.raw.replace(runId, crypto.randomUUID()), header, ep.secret), WebhookSignatureError);
  assert.throws(() => verifyWebhook(got.raw, header, 'whsec_other'), WebhookSignatureError);
  const t = Number(/t=(\d+)/.exec(header)![1]);
  assert.throws(() => verifyWebhook(got.raw, header, ep.secret, { now: t + 301 }), /tolerance 300 s/);
  assert.throws(() => verifyWebhook(got.raw, null, ep.secret), /no Silico-Signature/);
});

test('`silico webhooks listen` forwards new events to a local URL, signed with its session\'s secret', async () => {
  const r = receiver();
  receivers.push(r);
  const who = await newAccount({ usd: 5 });
  const configDir = mkdtempSync(path.join(os.tmpdir(), 'silico-webhooks-cli-'));
  let ready: () => void;
  const listening = new Promise<void>((res) => { ready = res; });
  const cli = silicoCli(['webhooks', 'listen', '--forward-to', await r.url, '--secret', 'whsec_cli_test', '-e', 'run.completed', '--max-events', '1'], {
    key: who.key, configDir, onStderr: (text) => { if (text.includes('Forwarding new events')) ready(); },
  });
  await listening;
  const runId = await completedRun(who.key);
  const done = await cli;
  assert.equal(done.code, 0, done.stderr);
  assert.match(done.stdout, /^run\.completed evt_\w+ -> \[200\]$/m);
  assert.equal(r.received.length, 1);
  const event = verifyWebhook(r.received[0]!.raw, String(r.received[0]!.headers['silico-signature']), 'whsec_cli_test');
  assert.equal(event.data.run_id, runId);
});

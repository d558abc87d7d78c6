import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  ApiError, AuthenticationError, IdempotencyConflictError, InsufficientCreditsError, IntegrityError, NotFoundError, NotImplementedError,
  PermissionError, RunFailed, RunTimeout, Silico, ValidationError, type RunEvent, type RunResults,
} from '../../sdk/src/index.ts';
import { BASE_URL, closeTestDb, newAccount, publishFixtureLab } from '../helpers.ts';
import { FaultProxy, errorEnvelope } from '../faultProxy.ts';

// The SDK against the real API, directly and through a fault-injecting proxy. Every
// wait is generous: runs start Python processes on a 2-core machine.
const LONG = { timeout: 300_000 };
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const GROWTH = 'platform/microbial-growth';
const EVENTS_PATH = /\/runs\/[^/]+\/events$/;

let owner: Awaited<ReturnType<typeof newAccount>>;
let client: Silico;
let proxied: Silico;
let proxy: FaultProxy;
let scratch: string;

before(async () => {
  owner = await newAccount({ usd: 10 });
  client = new Silico({ apiKey: owner.key, baseUrl: BASE_URL });
  proxy = await new FaultProxy(BASE_URL).start();
  // Small backoff so retries stay quick; Retry-After still sets the floor where sent.
  proxied = new Silico({ apiKey: owner.key, baseUrl: proxy.base, retry: { initialDelayMs: 50, minDelayMs: 20, maxDelayMs: 200 } });
  scratch = await mkdtemp(path.join(tmpdir(), 'silico-sdk-test-'));
});

after(async () => {
  await proxy?.close();
  await rm(scratch, { recursive: true, force: true });
  await closeTestDb();
});

let sirResults: RunResults;

test('client.run() runs a built-in lab to completion; its artifacts download verified; its events follow to the terminal one', LONG, async () => {
  const { run, results, handle } = await client.run('platform/sir-epidemic', {
    inputs: { population: 1000, initial_infected: 1, beta: 0.3, gamma: 0.1 }, maxRuntimeSeconds: 120, metadata: { suite: 'sdk' }, timeoutMs: 240_000,
  });
  assert.equal(run.status, 'completed');
  assert.equal(run.resolved_ref, 'platform/sir-epidemic@1.0.0');
  assert.deepEqual(run.metadata, { suite: 'sdk' });
  assert.equal(handle.id, run.id);
  assert.equal(results.run_id, run.id);
  assert.ok(results.artifacts.length > 0);
  assert.ok(['susceptible', 'infected', 'recovered'].every((k) => k in results.outputs), Object.keys(results.outputs).join());
  sirResults = results;

  const dir = path.join(scratch, 'sir');
  const files = await handle.downloadArtifacts(dir);
  assert.deepEqual(files.map((f) => path.basename(f.path)).sort(), results.artifacts.map((a) => a.file_name).sort());
  for (const f of files) {
    const bytes = await readFile(f.path);
    assert.equal(sha256(bytes), f.artifact.sha256, `${f.artifact.file_name} on disk re-hashes to its recorded sha256`);
    assert.equal(bytes.length, f.artifact.size_bytes);
  }
  assert.deepEqual((await readdir(dir)).sort(), files.map((f) => path.basename(f.path)).sort(), 'nothing else (no partial files) in the directory');

  const events: RunEvent[] = [];
  for await (const e of handle.events({ follow: true, pageSize: 5 })) events.push(e);
  assert.deepEqual(events.map((e) => e.seq), events.map((_, i) => i + 1), 'every event once, in order, across pages');
  assert.deepEqual(events.filter((e) => e.type === 'state_changed').map((e) => e.data.status), ['queued', 'running', 'completed']);
});

test('a 503 after the run was created upstream is retried with the same Idempotency-Key: one run exists', LONG, async () => {
  const tag = randomUUID();
  const mark = proxy.seen.length;
  proxy.inject('POST', /\/runs$/, { kind: 'forward-then-status', status: 503, headers: { 'Retry-After': '0' }, body: errorEnvelope('service_unavailable_error', 'service_unavailable') });
  const handle = await proxied.runs.start(GROWTH, { inputs: {}, maxRuntimeSeconds: 60, metadata: { sdk_test: tag } });
  const posts = proxy.requests('POST', /\/runs$/, mark);
  assert.equal(posts.length, 2, 'the first attempt and one retry');
  assert.equal(posts[0]!.fault, 'forward-then-status', 'the first attempt reached the API before its answer was lost');
  const keys = posts.map((r) => r.headers['idempotency-key']);
  assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
  assert.equal(keys[1], keys[0], 'the retry replays the same key');
  const listed = await client.runs.list({ metadata: { sdk_test: tag } });
  assert.deepEqual(listed.items.map((r) => r.id), [handle.id], 'exactly one run, the one the retry answered with');
  assert.equal((await handle.wait({ timeoutMs: 240_000 })).status, 'completed');
});

test('429 with Retry-After: 1 makes the client wait at least 1 s before retrying', LONG, async () => {
  const mark = proxy.seen.length;
  proxy.inject('GET', /\/account$/, { kind: 'status', status: 429, headers: { 'Retry-After': '1' }, body: errorEnvelope('rate_limit_error', 'rate_limited') });
  const account = await proxied.account.get();
  assert.equal(account.account?.namespace, owner.account.namespace);
  const gets = proxy.requests('GET', /\/account$/, mark);
  assert.equal(gets.length, 2);
  const waited = gets[1]!.at - gets[0]!.at;
  assert.ok(waited >= 1000, `the retry came ${waited.toFixed(1)} ms after the first attempt`);
});

test('transport failures and 409 idempotency_in_progress are retried; the retry of a POST reuses its key', LONG, async () => {
  let mark = proxy.seen.length;
  proxy.inject('GET', /\/account$/, { kind: 'drop' });
  await proxied.account.get();
  assert.equal(proxy.requests('GET', /\/account$/, mark).length, 2, 'a dropped connection is retried');

  mark = proxy.seen.length;
  proxy.inject('POST', /\/workspaces$/, { kind: 'status', status: 409, headers: { 'Retry-After': '0' }, body: errorEnvelope('conflict_error', 'idempotency_in_progress') });
  const ws = await proxied.workspaces.create({ title: `SDK retry ${Date.now()}` });
  assert.equal(typeof ws.workspace_id, 'string');
  const posts = proxy.requests('POST', /\/workspaces$/, mark);
  assert.equal(posts.length, 2);
  assert.equal(posts[1]!.headers['idempotency-key'], posts[0]!.headers['idempotency-key']);
});

test('422, 401 and an idempotency conflict are not retried', LONG, async () => {
  let mark = proxy.seen.length;
  await assert.rejects(proxied.runs.create({ ref: GROWTH, inputs: { growth_rate: -1 } }), (e: unknown) => {
    assert.ok(e instanceof ValidationError, String(e));
    assert.equal(e.status, 422);
    assert.equal(e.code, 'invalid_input_value');
    assert.equal(e.param, 'inputs.growth_rate');
    assert.match(String(e.requestId), /^[0-9a-f-]{36}$/);
    return true;
  });
  assert.equal(proxy.requests('POST', /\/runs$/, mark).length, 1, 'the proxy saw one request');

  mark = proxy.seen.length;
  const stranger = new Silico({ apiKey: 'sk_not_a_real_key', baseUrl: proxy.base });
  await assert.rejects(stranger.account.get(), (e: unknown) => e instanceof AuthenticationError && e.status === 401 && e.type === 'authentication_error');
  assert.equal(proxy.requests('GET', /\/account$/, mark).length, 1);

  const key = randomUUID();
  const first = await proxied.runs.create({ ref: GROWTH, inputs: {}, max_runtime_seconds: 60 }, { idempotencyKey: key });
  const again = await proxied.runs.create({ ref: GROWTH, inputs: {}, max_runtime_seconds: 60 }, { idempotencyKey: key });
  assert.equal(again.id, first.id, 'the same key and body replay the original run');
  mark = proxy.seen.length;
  await assert.rejects(proxied.runs.create({ ref: GROWTH, inputs: { growth_rate: 1 }, max_runtime_seconds: 60 }, { idempotencyKey: key }), IdempotencyConflictError);
  assert.equal(proxy.requests('POST', /\/runs$/, mark).length, 1);
  await client.runs.wait(first.id, { timeoutMs: 240_000 });
});

test('RunTimeout carries a live handle; waiting on it later resolves with the completed run', LONG, async () => {
  const handle = await client.runs.start(GROWTH, { inputs: { initial_biomass: 0.2 }, maxRuntimeSeconds: 60 });
  let timeout: RunTimeout | undefined;
  await assert.rejects(handle.wait({ timeoutMs: 50, pollIntervalMs: 20 }), (e: unknown) => {
    assert.ok(e instanceof RunTimeout, String(e));
    timeout = e;
    return true;
  });
  assert.equal(timeout!.handle.id, handle.id);
  assert.ok(['queued', 'running'].includes(timeout!.run!.status), timeout!.run!.status);
  await assert.rejects(client.runs.wait(handle.id, { timeoutMs: 0 }), RunTimeout);
  const run = await timeout!.handle.wait({ timeoutMs: 240_000 });
  assert.equal(run.status, 'completed');
  assert.equal(run.id, handle.id);
  assert.ok(run.credits_settled !== null && run.credits_settled <= run.credits_reserved);
});

// Published once, for the tests that need a run that stays live until it is cancelled.
let slowLabRef: Promise<string> | undefined;
const slowLab = async () => (await (slowLabRef ??= publishFixtureLab(owner, 'slow-lab'))).replace(/@.*$/, '');

test('a run that ends cancelled makes wait() throw RunFailed with the run and its handle', LONG, async () => {
  const handle = await client.runs.start(await slowLab(), { inputs: { seconds_per_window: 0.5 }, maxRuntimeSeconds: 600 });
  await handle.cancel();
  await assert.rejects(handle.wait({ timeoutMs: 120_000 }), (e: unknown) => {
    assert.ok(e instanceof RunFailed, String(e));
    assert.equal(e.run.status, 'cancelled');
    assert.equal(e.handle.id, handle.id);
    return true;
  });
});

test('wait() on a live run follows its event stream instead of polling, and returns at the terminal event', LONG, async () => {
  const handle = await proxied.runs.start(await slowLab(), { inputs: { seconds_per_window: 0.5 }, maxRuntimeSeconds: 600 });
  const mark = proxy.seen.length;
  // A short poll interval, so any fallback to polling would show as many status reads.
  // Observed at once: the run may end (and wait() reject) while the cancel below is in flight.
  const waiting = assert.rejects(handle.wait({ timeoutMs: 120_000, pollIntervalMs: 50 }), (e: unknown) => e instanceof RunFailed && e.run.status === 'cancelled');
  // Cancel only once the stream is open, so the run is certainly live while wait() streams.
  for (const until = Date.now() + 60_000; !proxy.requests('GET', EVENTS_PATH, mark).length && Date.now() < until;) await new Promise((r) => setTimeout(r, 20));
  await client.runs.cancel(handle.id);
  await waiting;
  const streams = proxy.requests('GET', EVENTS_PATH, mark);
  assert.deepEqual(streams.map((r) => r.headers.accept), ['text/event-stream'], 'one stream request');
  assert.equal(proxy.requests('GET', new RegExp(`/runs/${handle.id}$`), mark).length, 2, 'one read before streaming, one after the terminal event');
});

test('a tampered artifact or file download raises IntegrityError and leaves no file behind', LONG, async () => {
  const artifact = sirResults.artifacts.find((a) => a.size_bytes > 0)!;
  const dir = path.join(scratch, 'tampered');
  await rm(dir, { recursive: true, force: true });
  await (await import('node:fs/promises')).mkdir(dir);
  const dest = path.join(dir, 'artifact.bin');
  proxy.inject('GET', /\/runs\/[^/]+\/artifacts\/[^/]+$/, { kind: 'tamper' });
  await assert.rejects(proxied.runs.downloadArtifact(sirResults.run_id, artifact, dest), (e: unknown) => {
    assert.ok(e instanceof IntegrityError, String(e));
    assert.equal(e.expectedSha256, artifact.sha256);
    assert.notEqual(e.actualSha256, artifact.sha256);
    return true;
  });
  assert.equal(existsSync(dest), false);
  assert.deepEqual(await readdir(dir), [], 'no partial file either');
  const ok = await proxied.runs.downloadArtifact(sirResults.run_id, artifact.artifact_id, dest);
  assert.equal(ok.sha256, artifact.sha256, 'the same download untampered verifies (by id: its metadata is read first)');

  const src = path.join(scratch, 'input.csv');
  await writeFile(src, 't,x\n0,1\n1,2\n');
  const uploaded = await client.files.upload(src);
  proxy.inject('GET', /\/files\/[^/]+\/content$/, { kind: 'tamper' });
  const fileDest = path.join(dir, 'input-copy.csv');
  await assert.rejects(proxied.files.download(uploaded.file_id, fileDest), IntegrityError);
  assert.equal(existsSync(fileDest), false);
});

test('files upload streamed from disk, download verified, and list across pages', LONG, async () => {
  const other = await newAccount();
  const c = new Silico({ apiKey: other.key, baseUrl: BASE_URL });
  const uploaded = [];
  for (let i = 0; i < 3; i++) {
    const p = path.join(scratch, `page-${i}.json`);
    await writeFile(p, JSON.stringify({ i, pad: 'x'.repeat(1000 * i) }));
    const f = await c.files.upload(p);
    assert.equal(f.name, `page-${i}.json`);
    assert.equal(f.sha256, sha256(await readFile(p)));
    uploaded.push(f);
  }
  const fromBytes = await c.files.upload(Buffer.from('hello'), { filename: 'hello.txt' });
  assert.equal(fromBytes.size_bytes, 5);
  uploaded.push(fromBytes);

  const first = await c.files.list({ limit: 2 });
  assert.equal(first.items.length, 2);
  assert.equal(first.has_more, true);
  assert.ok(first.next_cursor);
  const second = await first.nextPage();
  assert.equal(second?.items.length, 2);
  const all = [];
  for await (const f of c.files.list({ limit: 2 })) all.push(f.file_id);
  assert.deepEqual(all, uploaded.map((f) => f.file_id).reverse(), 'every file once, newest first, across three pages');

  const dest = path.join(scratch, 'page-2.copy.json');
  const got = await c.files.download(uploaded[2]!.file_id, dest);
  assert.equal(got.sha256, uploaded[2]!.sha256);
  assert.deepEqual(await readFile(dest), await readFile(path.join(scratch, 'page-2.json')));

  const mark = proxy.seen.length;
  const runIds = [];
  for await (const r of proxied.runs.list({ limit: 1 })) runIds.push(r.id);
  assert.ok(runIds.length >= 3, `${runIds.length} runs`);
  assert.equal(new Set(runIds).size, runIds.length, 'no run twice');
  assert.equal(proxy.requests('GET', /\/runs$/, mark).length, runIds.length, 'one request per page of one');
});

test('402, 403, 404 and 501 answers surface as their error classes', LONG, async () => {
  const poor = await newAccount({ usd: 0.001 });
  await assert.rejects(new Silico({ apiKey: poor.key, baseUrl: BASE_URL }).runs.start(GROWTH, { maxRuntimeSeconds: 3600 }), (e: unknown) => {
    assert.ok(e instanceof InsufficientCreditsError, String(e));
    assert.equal(e.status, 402);
    assert.equal(e.code, 'insufficient_credits');
    return true;
  });
  const closed = await newAccount({ gateway: false, usd: 1 });
  await assert.rejects(new Silico({ apiKey: closed.key, baseUrl: BASE_URL }).runs.start(GROWTH), (e: unknown) => e instanceof PermissionError && e.code === 'gateway_not_enabled');
  await assert.rejects(client.runs.get(randomUUID()), (e: unknown) => e instanceof NotFoundError && e.code === 'run_not_found');

  // Whatever is still unbuilt answers 501: the SDK surfaces it as an ApiError (NotImplementedError).
  const doc = await (await fetch(`${BASE_URL}/openapi.json`)).json() as { paths: Record<string, Record<string, { 'x-implemented': boolean }>> };
  if (doc.paths['/sessions']!.get!['x-implemented'] === false) {
    await assert.rejects(client.sessions.list(), (e: unknown) => e instanceof NotImplementedError && e instanceof ApiError && e.status === 501 && e.code === 'not_implemented');
  } else {
    assert.ok(Array.isArray((await client.sessions.list()).items));
  }
});

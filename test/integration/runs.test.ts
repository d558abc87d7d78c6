import { createHash } from 'node:crypto';
import { readRuntimeLock } from '../../storage/runtimePins.ts';
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { call, errorOf, closeTestDb, newAccount, newRunRow, testDb, waitForRun, driverPid, groupAlive, type Res, publishFixtureLab, workspaceOfLab, BASE_URL, refusedWithin } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { insertAcceptedRun } from '../../storage/db/runs.ts';
import { keyedUuid } from '../../storage/ids.ts';
import { sha256Hex, digestJson } from '../../storage/digest.ts';
import { getBalances } from '../../storage/ledger.ts';
import { operatorView } from '../operatorView.ts';
import { runWorkflowId } from '../../kernel/workflowNames.ts';
import { consoleRoot } from '../../kernel/workflowMetadata.ts';

after(closeTestDb);

const RUN_FIELDS = ['artifact_count', 'compute_profile', 'created_at', 'credits_reserved', 'credits_settled', 'error', 'experiment_id', 'finished_at', 'id', 'inputs', 'kind', 'max_runtime_seconds', 'metadata', 'object', 'package_sha256', 'plan_id', 'progress', 'ref', 'resolved_ref', 'run_id', 'started_at', 'status'];
const ENVELOPE = ['links', 'next_actions', 'request_id', 'schema_version', 'warnings'];
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });


function plan(key: string, body: Record<string, unknown>): Promise<Res> {
  return call('POST', '/run-plans', { key, body: { capability_ref: 'platform/microbial-growth@1.0.0', ...body } });
}

/** The closed-form answer the microbial-growth lab must reproduce. */
function biomassAt(t: number, x0: number, s0: number, r: number, y = 0.5): number {
  const k = x0 + y * s0;
  return k / (1 + ((k - x0) / x0) * Math.exp(-r * t));
}

let slowRef = '';
let owner: Awaited<ReturnType<typeof newAccount>>;
before(async () => {
  owner = await newAccount({ usd: 10 });
  slowRef = await publishFixtureLab(owner, 'slow-lab');
});

test('a plan, approved by its digest, runs microbial-growth to its known answer with hashed artifacts', async () => {
  const p = await plan(owner.key, { inputs: { initial_biomass: 0.2, growth_rate: 0.3 }, max_runtime_seconds: 120 });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.body.status, 'ready');
  assert.equal(p.body.plan_sha256, digestJson(p.body.digest_input), 'the digest is recomputable from digest_input');
  assert.equal(p.body.estimated_max_usd, 0.0012, '120 s × $0.00001/s');
  const before = await getBalances(testDb(), owner.account.id);
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { plan_id: p.body.plan_id, plan_sha256: p.body.plan_sha256 } });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.body).sort(), [...RUN_FIELDS, ...ENVELOPE].sort());
  assert.equal(res.body.kind, 'hub');
  assert.equal(res.body.credits_reserved, 0.0012);
  const run = await waitForRun(owner.key, res.body.id);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  assert.equal(run.progress, 1);
  assert.ok(run.credits_settled > 0 && run.credits_settled <= run.credits_reserved);
  const after = await getBalances(testDb(), owner.account.id);
  assert.equal(after.reserved_micros, before.reserved_micros, 'the reservation was settled');
  assert.equal(before.available_micros - after.available_micros, Math.round(run.credits_settled * 1e6), 'only actual use was charged');
  // What an operator reads of its workflow in the Temporal UI.
  const seen = await operatorView(runWorkflowId(run.id));
  assert.equal(seen.summary, `run of ${run.resolved_ref} on cpu-small for ${owner.account.id}, $0.0012 reserved`);
  assert.equal(seen.details, `Run ${run.id} of account ${owner.account.id}.\n\n[API](${BASE_URL}/runs/${run.id}) · [console](${consoleRoot(BASE_URL)}runs/${run.id})`);

  const results = await call('GET', `/runs/${run.id}/results`, { key: owner.key });
  assert.equal(results.status, 200);
  assert.ok(Math.abs(results.body.outputs.biomass - biomassAt(24, 0.2, 10, 0.3)) < 1e-9, `biomass ${results.body.outputs.biomass}`);
  assert.ok(Math.abs(results.body.outputs.substrate - (0.2 + 5 - results.body.outputs.biomass) / 0.5) < 1e-9, 'mass balance X + Y·S');
  assert.deepEqual(Object.keys(results.body.provenance).sort(), ['compute_profile', 'environment_lock_sha256', 'finished_at', 'inputs_sha256', 'package_sha256', 'ref', 'resolved_ref', 'seed', 'started_at']);
  assert.equal(results.body.provenance.environment_lock_sha256, readRuntimeLock().sha256, 'a built-in lab runs in the default runtime');
  assert.equal(results.body.provenance.inputs_sha256, digestJson({ initial_biomass: 0.2, growth_rate: 0.3 }));
  const names = results.body.artifacts.map((a: any) => a.file_name).sort();
  assert.deepEqual(names, ['biomass.csv', 'biomass.svg', 'outputs.json', 'substrate.csv', 'substrate.svg', 'visuals.json']);
  for (const a of results.body.artifacts) {
    const dl = await fetch(a.download_url, { headers: { Authorization: `Bearer ${owner.key}` } });
    assert.equal(dl.status, 200);
    const bytes = Buffer.from(await dl.arrayBuffer());
    assert.equal(sha256Hex(bytes), a.sha256, `${a.file_name} re-hashes to its recorded sha256`);
    assert.equal(dl.headers.get('etag'), `"${a.sha256}"`);
    assert.equal(bytes.length, a.size_bytes);
  }
  const csv = results.body.artifacts.find((a: any) => a.file_name === 'biomass.csv');
  const meta = await call('GET', `/runs/${run.id}/artifacts/${csv.id}/metadata`, { key: owner.key });
  assert.equal(meta.body.sha256, csv.sha256);

  const events = await call('GET', `/runs/${run.id}/events?limit=1000`, { key: owner.key });
  const seqs = events.body.items.map((e: any) => e.seq);
  assert.deepEqual(seqs, seqs.map((_: number, i: number) => i + 1), 'strictly increasing, no gaps');
  const types = new Set(events.body.items.map((e: any) => e.type));
  for (const t of ['state_changed', 'log', 'progress', 'artifact_stored', 'charge_settled']) assert.ok(types.has(t), t);
  assert.deepEqual(events.body.items.filter((e: any) => e.type === 'state_changed').map((e: any) => e.data.status), ['queued', 'running', 'completed']);
});

test('the direct form (ref without a version) prepares and executes in one step', async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/microbial-growth', inputs: {}, metadata: { study: 'direct' }, max_runtime_seconds: 60 } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.resolved_ref, 'platform/microbial-growth@1.0.0');
  assert.equal(res.body.plan_id, null);
  const run = await waitForRun(owner.key, res.body.id);
  assert.equal(run.status, 'completed');
  const listed = await call('GET', '/runs?metadata[study]=direct&status=completed', { key: owner.key });
  assert.deepEqual(listed.body.items.map((r: any) => r.id), [run.id]);
  const bad = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/microbial-growth', inputs: { growth_rate: -1 } } });
  assert.equal(bad.status, 422);
  assert.equal(errorOf(bad).code, 'invalid_input_value');
  assert.equal(errorOf(bad).param, 'inputs.growth_rate');
});

test('POST /runs with Prefer: wait answers the run once it has ended; one that outlasts the wait as it stands then; other preferences change nothing', async () => {
  const waited = await call('POST', '/runs', { key: owner.key, headers: { ...idem(), Prefer: 'wait=30' }, body: { ref: 'platform/microbial-growth', inputs: {}, max_runtime_seconds: 60 } });
  assert.equal(waited.status, 200, waited.text);
  assert.equal(waited.headers.get('preference-applied'), 'wait=30');
  assert.equal(waited.body.status, 'completed', 'answered once it ended');
  assert.ok(waited.body.finished_at && waited.body.credits_settled !== null, 'ended and settled');
  const read = (await call('GET', `/runs/${waited.body.id}`, { key: owner.key })).body;
  assert.deepEqual({ ...waited.body, request_id: null }, { ...read, request_id: null }, 'the run, and what comes next for it, as GET /runs/{id} gives them');

  const t0 = Date.now();
  const outlasting = await call('POST', '/runs', { key: owner.key, headers: { ...idem(), Prefer: 'respond-async, wait=1' }, body: { ref: slowRef, inputs: { seconds_per_window: 0.5 }, max_runtime_seconds: 600 } });
  assert.equal(outlasting.status, 200, outlasting.text);
  assert.ok(Date.now() - t0 >= 1000, 'it waited the second asked for');
  assert.equal(outlasting.headers.get('preference-applied'), 'wait=1');
  assert.ok(['queued', 'running'].includes(outlasting.body.status), outlasting.body.status);
  assert.equal((await call('POST', `/runs/${outlasting.body.id}/cancel`, { key: owner.key })).status, 200);

  // A longer wait than the service gives is capped; no wait, or one not in whole seconds, is none.
  const capped = await call('POST', '/runs', { key: owner.key, headers: { ...idem(), Prefer: 'wait=600' }, body: { ref: 'platform/microbial-growth', inputs: {}, max_runtime_seconds: 60 } });
  assert.equal(capped.headers.get('preference-applied'), 'wait=60');
  assert.equal(capped.body.status, 'completed');
  for (const prefer of ['respond-async', 'wait=soon']) {
    const plain = await call('POST', '/runs', { key: owner.key, headers: { ...idem(), Prefer: prefer }, body: { ref: 'platform/microbial-growth', inputs: {}, max_runtime_seconds: 60 } });
    assert.equal(plain.status, 200, plain.text);
    assert.equal(plain.headers.get('preference-applied'), null, prefer);
    await waitForRun(owner.key, plain.body.id);
  }
});

test('a compute profile changed in Postgres applies to the next plan at once: the api keeps profiles only until one changes', async () => {
  const id = `cache-${crypto.randomUUID().slice(0, 8)}`;
  const profiles = () => testDb()('compute_profiles').where({ id });
  await testDb()('compute_profiles').insert({ id, title: 'cached', kind: 'cpu', vcpus: 1, memory_mib: 512, gpu: null, price_per_second_micros: 10, max_runtime_seconds: 100, schedule_to_start_seconds: 60, sort: 98 });
  try {
    const plan = (seconds: number) => call('POST', '/run-plans', { key: owner.key, body: { capability_ref: 'platform/microbial-growth@1.0.0', inputs: {}, compute_profile_id: id, max_runtime_seconds: seconds } });
    const first = await plan(100);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.estimated_max_usd, 0.001);
    // The change reaches the api as a Postgres notice a moment after it commits; well
    // within the cache's own minute, so the notice applied it.
    await profiles().update({ max_runtime_seconds: 50, price_per_second_micros: 20 });
    const bounded = await refusedWithin(2000, () => plan(100), (r) => r.status !== 200);
    assert.equal(bounded.status, 422, bounded.text);
    assert.match(errorOf(bounded).message, /at most 50 on cache-/);
    assert.equal((await plan(50)).body.estimated_max_usd, 0.001, 'the new price');
    await profiles().delete();
    assert.equal(errorOf(await refusedWithin(2000, () => plan(50), (r) => r.status !== 200)).code, 'compute_profile_not_found');
  } finally {
    await profiles().delete();
  }
});

test('plan errors: unknown inputs, digest mismatch, blocked, expired, consumed', async () => {
  const unknown = await plan(owner.key, { inputs: { initial_biomass: 1, colour: 'red', zeta: 2 } });
  assert.equal(unknown.status, 422);
  assert.equal(errorOf(unknown).code, 'unknown_inputs');
  assert.deepEqual(errorOf(unknown).details.unknown, ['colour', 'zeta']);
  // It lists what the lab declares, as its capability does, and says it.
  const declared = (await call('GET', '/capabilities/platform/microbial-growth', { key: owner.key })).body.inputs
    .map((i: any) => ({ name: i.name, value_type: i.value_type, required: i.required }));
  assert.deepEqual(errorOf(unknown).details.declared, declared);
  assert.equal(errorOf(unknown).message, 'Inputs not declared by platform/microbial-growth@1.0.0: colour, zeta. It declares initial_biomass (number), initial_substrate (number), growth_rate (number).');

  const ok = await plan(owner.key, { inputs: {}, max_runtime_seconds: 60 });
  const wrong = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { plan_id: ok.body.plan_id, plan_sha256: 'f'.repeat(64) } });
  assert.equal(wrong.status, 409);
  assert.equal(errorOf(wrong).code, 'plan_digest_mismatch');

  const blocked = await plan(owner.key, { inputs: { initial_biomass: -5 } });
  assert.equal(blocked.body.status, 'blocked');
  assert.equal(blocked.body.findings[0].severity, 'blocking');
  const runBlocked = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { plan_id: blocked.body.plan_id, plan_sha256: blocked.body.plan_sha256 } });
  assert.equal(errorOf(runBlocked).code, 'plan_blocked');

  const old = await plan(owner.key, { inputs: {}, max_runtime_seconds: 60 });
  await testDb()('plans').where({ id: old.body.plan_id }).update({ expires_at: testDb().raw(`now() - interval '1 second'`) });
  const expired = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { plan_id: old.body.plan_id, plan_sha256: old.body.plan_sha256 } });
  assert.equal(errorOf(expired).code, 'plan_expired');

  const first = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { plan_id: ok.body.plan_id, plan_sha256: ok.body.plan_sha256 } });
  assert.equal(first.status, 200);
  const again = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { plan_id: ok.body.plan_id, plan_sha256: ok.body.plan_sha256 } });
  assert.equal(again.status, 409);
  assert.equal(errorOf(again).code, 'plan_unavailable');
  assert.equal(errorOf(again).details.result_ref, `run:${first.body.id}`);
  const foreign = await call('POST', '/runs', { key: (await newAccount()).key, headers: idem(), body: { plan_id: ok.body.plan_id, plan_sha256: ok.body.plan_sha256 } });
  assert.equal(errorOf(foreign).code, 'plan_not_found');
  await waitForRun(owner.key, first.body.id);
});

test('POST /runs: 20 concurrent requests with one key and body make one run; another body is a conflict', async () => {
  const a = await newAccount({ usd: 1 });
  const headers = idem();
  const body = { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 30 };
  const answers = await Promise.all(Array.from({ length: 20 }, () => call('POST', '/runs', { key: a.key, headers, body })));
  const ok = answers.filter((r) => r.status === 200);
  assert.ok(ok.length >= 1);
  assert.equal(new Set(ok.map((r) => r.body.id)).size, 1);
  for (const r of answers.filter((x) => x.status !== 200)) assert.equal(errorOf(r).code, 'idempotency_in_progress');
  const runs = await testDb()('runs').where({ account_id: a.account.id });
  assert.equal(runs.length, 1, 'exactly one run');
  const conflict = await call('POST', '/runs', { key: a.key, headers, body: { ...body, inputs: { growth_rate: 1 } } });
  assert.equal(errorOf(conflict).code, 'idempotency_conflict');
  await waitForRun(a.key, ok[0]!.body.id);
});

test('a retry whose earlier attempt recorded the run and died before starting it (its key\'s lock lapsed) completes that run: one run, the same id, plan form or direct', async () => {
  const a = await newAccount({ usd: 1 });
  const release = await testDb()('releases').where({ namespace: 'platform', name: 'microbial-growth', version: '1.0.0' }).first('id', 'package_sha256');
  // What a replica killed between recording and starting leaves: the run recorded under its
  // key's id, queued, its compute reserved, its plan used, and no workflow.
  for (const form of ['direct', 'plan'] as const) {
    const key = crypto.randomUUID();
    const p = form === 'plan' ? (await plan(a.key, { inputs: {}, max_runtime_seconds: 30 })).body : undefined;
    const body = p ? { plan_id: p.plan_id, plan_sha256: p.plan_sha256 } : { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 30 };
    const orphan = await insertAcceptedRun(testDb(), newRunRow(a.account.id, { id: keyedUuid(a.account.id, 'run_create', key), release_id: release.id, package_sha256: release.package_sha256, plan_id: p?.plan_id ?? null, max_runtime_seconds: 30 }));
    if (p) await testDb()('plans').where({ id: p.plan_id }).update({ consumed_at: new Date(), result_ref: `run:${orphan.id}` });
    const retried = await call('POST', '/runs', { key: a.key, headers: { 'Idempotency-Key': key }, body });
    assert.equal(retried.status, 200, `${form}: ${retried.text}`);
    assert.equal(retried.body.id, orphan.id, `${form}: the retry answers the run its first attempt recorded`);
    assert.equal((await waitForRun(a.key, orphan.id)).status, 'completed', `${form}: and its workflow ran it`);
  }
  assert.equal((await testDb()('runs').where({ account_id: a.account.id })).length, 2, 'one run per request, none made twice');
});

test('402 insufficient_credits when the balance is below the maximum; nothing is reserved', async () => {
  const poor = await newAccount({ usd: 0.001 });
  const p = await plan(poor.key, { inputs: {}, max_runtime_seconds: 3600 });
  const res = await call('POST', '/runs', { key: poor.key, headers: idem(), body: { plan_id: p.body.plan_id, plan_sha256: p.body.plan_sha256 } });
  assert.equal(res.status, 402);
  assert.equal(errorOf(res).code, 'insufficient_credits');
  assert.equal(errorOf(res).type, 'insufficient_credits_error');
  assert.deepEqual(await getBalances(testDb(), poor.account.id), { available_micros: 1000, reserved_micros: 0, spent_micros: 0 });
  assert.equal((await testDb()('runs').where({ account_id: poor.account.id })).length, 0);
  const retry = await call('POST', '/runs', { key: poor.key, headers: idem(), body: { plan_id: p.body.plan_id, plan_sha256: p.body.plan_sha256 } });
  assert.equal(retry.status, 402, 'the plan was not consumed');
});

test('cancel while running: the process group is gone within 3 s, only elapsed compute is charged; cancelling again changes nothing', async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: slowRef, inputs: { seconds_per_window: 0.5 }, max_runtime_seconds: 600 } });
  assert.equal(res.status, 200, res.text);
  const pid = await driverPid(owner.key, res.body.id);
  await new Promise((r) => setTimeout(r, 1500));
  const t0 = Date.now();
  const cancel = await call('POST', `/runs/${res.body.id}/cancel`, { key: owner.key });
  assert.equal(cancel.status, 200);
  assert.ok(['cancelling', 'cancelled'].includes(cancel.body.status));
  const alive = () => groupAlive(pid);
  while (alive() && Date.now() - t0 < 10000) await new Promise((r) => setTimeout(r, 50));
  assert.ok(Date.now() - t0 <= 3000, `process group gone after ${Date.now() - t0} ms`);
  const run = await waitForRun(owner.key, res.body.id, 20000);
  assert.equal(run.status, 'cancelled');
  const elapsed = (new Date(run.finished_at).getTime() - new Date(run.started_at).getTime()) / 1000;
  assert.ok(run.credits_settled <= Math.ceil(elapsed * 10 + 1) / 1e6, `charged ${run.credits_settled} for ${elapsed}s`);
  assert.ok(run.credits_settled < run.credits_reserved);
  const again = await call('POST', `/runs/${run.id}/cancel`, { key: owner.key });
  assert.equal(again.body.status, 'cancelled');
  assert.equal(again.body.finished_at, run.finished_at);
});

test('server-sent events resume after Last-Event-ID with exactly the missed events, and close after the terminal one', async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 60 } });
  await waitForRun(owner.key, res.body.id);
  const all = (await call('GET', `/runs/${res.body.id}/events?limit=1000`, { key: owner.key })).body.items;
  const sse = await fetch(`${process.env.SILICO_TEST_BASE_URL}/runs/${res.body.id}/events`, { headers: { Authorization: `Bearer ${owner.key}`, Accept: 'text/event-stream', 'Last-Event-ID': '3' } });
  assert.match(sse.headers.get('content-type')!, /text\/event-stream/);
  const text = await sse.text();
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  assert.deepEqual(ids, all.filter((e: any) => e.seq > 3).map((e: any) => e.seq));
  // Past any sequence number (an integer column): `after` is out of range; a Last-Event-ID
  // no event could carry is ignored. Both were 500s.
  const far = await call('GET', `/runs/${res.body.id}/events?after=2147483648`, { key: owner.key });
  assert.equal(far.status, 422);
  assert.equal(errorOf(far).code, 'parameter_out_of_range');
  const bogus = await fetch(`${process.env.SILICO_TEST_BASE_URL}/runs/${res.body.id}/events`, { headers: { Authorization: `Bearer ${owner.key}`, Accept: 'text/event-stream', 'Last-Event-ID': '99999999999' } });
  assert.deepEqual([...(await bogus.text()).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])), all.map((e: any) => e.seq));
});

test('a client following server-sent events from the start gets every event as it happens, then the stream closes', async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 60 } });
  const sse = await fetch(`${process.env.SILICO_TEST_BASE_URL}/runs/${res.body.id}/events`, { headers: { Authorization: `Bearer ${owner.key}`, Accept: 'text/event-stream' } });
  const text = await sse.text(); // ends only when the server closes after the terminal event
  const run = (await call('GET', `/runs/${res.body.id}`, { key: owner.key })).body;
  assert.equal(run.status, 'completed');
  const all = (await call('GET', `/runs/${res.body.id}/events?limit=1000`, { key: owner.key })).body.items;
  assert.deepEqual([...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])), all.map((e: any) => e.seq));
  assert.deepEqual(all.map((e: any) => e.seq), all.map((_: unknown, i: number) => i + 1), 'no gaps');
});

test("another account's run is answered exactly like a missing one", async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 60 } });
  const other = await newAccount();
  const foreign = await call('GET', `/runs/${res.body.id}`, { key: other.key });
  const missing = await call('GET', `/runs/${crypto.randomUUID()}`, { key: other.key });
  assert.equal(foreign.status, 404);
  assert.equal(errorOf(foreign).code, 'run_not_found');
  const strip = (t: string) => t.replace(/[0-9a-f-]{36}/g, 'ID');
  assert.equal(strip(foreign.text), strip(missing.text));
  await waitForRun(owner.key, res.body.id);
});

test('a lab that needs a package the default runtime lacks gets its own environment, resolved at plan time', { timeout: 120_000 }, async () => {
  const ref = await publishFixtureLab(owner, 'needs-scipy');
  const p = await call('POST', '/run-plans', { key: owner.key, body: { capability_ref: ref, inputs: {} } });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.body.status, 'ready', JSON.stringify(p.body.findings));
  const f = p.body.findings.find((x: any) => x.code === 'environment_own');
  assert.equal(f.severity, 'info');
  assert.match(f.message, /\(scipy==1\.14\.1\), so it runs in its own environment: Python 3\.11 with biosimulant 0\.0\.40, \d+ distributions locked with their hashes \(lock sha256:[0-9a-f]{64}\)/);
  assert.equal(p.body.environment.python, '3.11');
  assert.match(p.body.environment.lock_sha256, /^[0-9a-f]{64}$/);
  assert.notEqual(p.body.environment.lock_sha256, readRuntimeLock().sha256);
});

test('an artifact is listed with a download URL only where its caller can download it: a private one has download_url null, and every URL listed downloads', async () => {
  // noisy-growth with its series output kept private: its CSV, its plot and private-outputs.json are the owner's evidence.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'private-output-lab-'));
  cpSync(path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth'), dir, { recursive: true });
  const yaml = readFileSync(path.join(dir, 'lab.yaml'), 'utf8');
  const privateYaml = yaml.replace('description: Population size over time.', 'description: Population size over time.\n      public: false');
  assert.notEqual(privateYaml, yaml);
  writeFileSync(path.join(dir, 'lab.yaml'), privateYaml);
  const ws = await workspaceOfLab(owner.key, 'Private series', dir);
  const p = await call('POST', '/run-plans', { key: owner.key, body: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, inputs: { growth_rate: 0.3 }, max_runtime_seconds: 120 } });
  assert.equal(p.body.status, 'ready', p.text);
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { plan_id: p.body.plan_id, plan_sha256: p.body.plan_sha256 } });
  assert.equal(res.status, 200, res.text);
  const run = await waitForRun(owner.key, res.body.id, 120_000);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));

  const fetchUrl = (url: string) => fetch(url, { headers: { Authorization: `Bearer ${owner.key}` } });
  const results = (await call('GET', `/runs/${run.id}/results`, { key: owner.key })).body;
  assert.ok(results.artifacts.length > 0);
  for (const a of results.artifacts) {
    assert.equal(typeof a.download_url, 'string', `${a.file_name}: results list public artifacts, each downloadable`);
    assert.equal((await fetchUrl(a.download_url)).status, 200, a.file_name);
    const meta = (await call('GET', `/runs/${run.id}/artifacts/${a.artifact_id}/metadata`, { key: owner.key })).body;
    assert.equal(meta.public, true);
    assert.equal(meta.download_url, a.download_url, 'one URL for one artifact, wherever it is listed');
  }
  const hidden = await testDb()('run_artifacts').where({ run_id: run.id, public: false }).select('id', 'file_name');
  assert.deepEqual(hidden.map((h: { file_name: string }) => h.file_name).sort(), ['private-outputs.json', 'size.csv', 'size.svg']);
  for (const h of hidden) {
    const meta = await call('GET', `/runs/${run.id}/artifacts/${h.id}/metadata`, { key: owner.key });
    assert.equal(meta.status, 200, meta.text);
    assert.equal(meta.body.public, false);
    assert.equal(meta.body.download_url, null, `${h.file_name}: private, so no URL is listed`);
    const dl = await fetchUrl(`${BASE_URL}/runs/${run.id}/artifacts/${h.id}`);
    assert.equal(dl.status, 404, `${h.file_name}: the download route does not serve it`);
    // Nor does the object store, by the same rule: no presigned URL, no redirect.
    assert.equal((await call('GET', `/runs/${run.id}/artifacts/${h.id}/metadata?direct=true`, { key: owner.key })).body.direct_download, null, h.file_name);
    assert.equal((await fetch(`${BASE_URL}/runs/${run.id}/artifacts/${h.id}?redirect=1`, { headers: { Authorization: `Bearer ${owner.key}` }, redirect: 'manual' })).status, 404, h.file_name);
  }

  // Straight from the object store, asked for: a presigned URL beside each download_url, and a 307 to one.
  assert.ok(results.artifacts.every((a: { direct_download: unknown }) => a.direct_download === null), 'not listed unless asked');
  const direct = (await call('GET', `/runs/${run.id}/results?direct=true`, { key: owner.key })).body;
  for (const a of direct.artifacts) {
    assert.ok(Date.parse(a.direct_download.expires_at) > Date.now(), a.file_name);
    const fromStore = await fetch(a.direct_download.url);
    assert.equal(fromStore.status, 200, a.file_name);
    assert.equal(createHash('sha256').update(Buffer.from(await fromStore.arrayBuffer())).digest('hex'), a.sha256, `${a.file_name}: the store's bytes are the record's`);
    const redirected = await fetch(`${a.download_url}?redirect=1`, { headers: { Authorization: `Bearer ${owner.key}` }, redirect: 'manual' });
    assert.equal(redirected.status, 307, a.file_name);
    assert.equal(new URL(redirected.headers.get('location')!).origin, new URL(a.direct_download.url).origin, 'to the object store');
  }
});

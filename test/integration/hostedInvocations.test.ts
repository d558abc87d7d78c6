import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { BASE_URL, admin, call, closeTestDb, errorOf, hostedLabOwner, newAccount, retireHosting, testDb, until, workerTmpDirs } from '../helpers.ts';
import { createKey, SCOPES } from '../../storage/db/apiKeys.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { acceptInvocation, markWorkflowStarted } from '../../storage/db/hostedInvocations.ts';
import { getBalances } from '../../storage/ledger.ts';
import { digestJson } from '../../storage/digest.ts';
import { newId } from '../../storage/ids.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// Hosted invocations through the API on the real stack: a plan binds the exact release,
// the inputs, the deployment, the account and the key's OAuth client; only that client
// executes it; an invocation is its invoking account's alone (even the lab's owner sees
// nothing of a stranger's); a paused or ended deployment refuses with a precise code.

const hosted: Array<{ key: string; labId: string }> = [];
after(async () => {
  // Warm instances are sandboxed processes: none outlives this file.
  for (const h of hosted) await retireHosting(h.key, h.labId);
});
after(closeTestDb);

type Account = Awaited<ReturnType<typeof newAccount>>;
let lab: Awaited<ReturnType<typeof hostedLabOwner>>;
let stranger: Account;

const hostingOf = async () => (await call('GET', `/labs/${lab.labId}/hosting`, { key: lab.owner.key })).body;
const waitForStatus = (status: string) => until(120_000, async () => {
  const h = await hostingOf();
  return h.status === status ? h : undefined;
});

/** An invocation once it has ended, read with `key`. */
const endedInvocation = (id: string, key: string) => until(60_000, async () => {
  const r = await call('GET', `/hosted-invocations/${id}`, { key });
  assert.equal(r.status, 200, r.text);
  return ['completed', 'failed', 'cancelled', 'expired'].includes(r.body.status) ? r.body : undefined;
});

async function prepare(key: string, body: Record<string, unknown> = {}) {
  return call('POST', '/hosted-invocation-plans', { key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { reference: lab.reference, sha256: lab.sha256, ...body } });
}

async function readyPlan(key: string, body: Record<string, unknown> = {}) {
  const res = await prepare(key, body);
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.status, 'ready', res.text);
  return res.body;
}

const execute = (key: string, plan: { plan_id: string; plan_sha256: string }) =>
  call('POST', '/hosted-invocations', { key, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } });

/** The error as another account sees it, without what differs per request. */
const sameAs404 = (res: Awaited<ReturnType<typeof call>>) => ({ ...errorOf(res), request_id: null });

// Public hosting, reviewed by the operator, so that a stranger may invoke it too.
before(async () => {
  lab = await hostedLabOwner();
  hosted.push({ key: lab.owner.key, labId: lab.labId });
  stranger = await newAccount({ usd: 5 });
  assert.equal((await call('PUT', `/labs/${lab.labId}/visibility`, { key: lab.owner.key, body: { visibility: 'public' } })).status, 200);
  const plan = await call('POST', `/labs/${lab.labId}/hosting-plans`, {
    key: lab.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: lab.reference, sha256: lab.sha256 }, visibility: 'public', min_instances: 1, max_instances: 2 },
  });
  assert.equal(plan.status, 201, plan.text);
  const requested = await call('POST', '/hosting-requests', { key: lab.owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(requested.status, 201, requested.text);
  await waitForStatus('awaiting_review');
  await admin('hosting', 'approve', lab.labId);
  await waitForStatus('ready');
});

test('a plan binds the exact release, inputs, seed, deployment, account and key client; nothing runs and nothing is reserved', async () => {
  const noKey = await call('POST', '/hosted-invocation-plans', { key: lab.owner.key, body: { reference: lab.reference, sha256: lab.sha256 } });
  assert.equal(noKey.status, 400);
  assert.equal(errorOf(noKey).code, 'idempotency_key_required');

  const inputs = { growth_rate: 0.2, noise: 0.1 };
  const plan = await readyPlan(lab.owner.key, { inputs, seed: 5 });
  const key = await testDb()('api_keys').where({ id: lab.owner.keyId }).first('client_id');
  const profile = await testDb()('compute_profiles').where({ id: 'cpu-small' }).first();
  const maxSeconds = Math.min(300, profile.max_runtime_seconds);
  assert.equal(plan.object, 'hosted_invocation_plan');
  assert.equal(plan.reference, lab.reference);
  assert.equal(plan.sha256, lab.sha256);
  assert.deepEqual(plan.inputs, inputs);
  assert.equal(plan.inputs_sha256, digestJson(inputs));
  assert.equal(plan.seed, 5);
  assert.equal(plan.client_id, key.client_id);
  assert.deepEqual(plan.deployment, { lab_id: lab.labId, generation: 1, status: 'ready' });
  assert.deepEqual(plan.compute, { profile: 'cpu-small', max_seconds: maxSeconds, price_per_second_usd: profile.price_per_second_micros / 1e6 });
  assert.equal(plan.estimated_max_usd, maxSeconds * profile.price_per_second_micros / 1e6);
  assert.ok(Date.parse(plan.expires_at) > Date.now());
  // The digest covers all of it: account, client, deployment generation, inputs and bounds.
  assert.equal(plan.digest_input.account, lab.owner.account.id);
  assert.deepEqual(
    { ...plan.digest_input.proposal },
    {
      account_id: lab.owner.account.id, client_id: key.client_id, lab_id: lab.labId, hosting_generation: 1, reference: lab.reference, package_sha256: lab.sha256,
      inputs, inputs_sha256: digestJson(inputs), seed: 5, compute_profile: 'cpu-small', max_seconds: maxSeconds, estimated_max_micros: maxSeconds * profile.price_per_second_micros,
    },
  );
  assert.deepEqual(plan.next_actions.map((a: any) => a.tool), ['hosted_invocation_execute']);

  const unseeded = await readyPlan(lab.owner.key);
  assert.ok(Number.isInteger(unseeded.seed), 'a seed is chosen when none is given');
  assert.deepEqual(unseeded.inputs, {});
  assert.equal(await testDb()('hosted_invocations').where({ account_id: lab.owner.account.id }).count('* as n').first().then((r: any) => Number(r.n)), 0, 'no execution');
  assert.equal((await getBalances(testDb(), lab.owner.account.id)).reserved_micros, 0, 'nothing reserved');
});

test('the digest, unknown inputs and invalid values are refused as for a run; a release that is not hosted is not found', async () => {
  const wrong = await prepare(lab.owner.key, { sha256: '0'.repeat(64) });
  assert.equal(wrong.status, 422);
  assert.equal(errorOf(wrong).code, 'checksum_mismatch');
  assert.equal(errorOf(wrong).param, 'sha256');
  const unknown = await prepare(lab.owner.key, { inputs: { growth_rate: 0.1, bogus: 1 } });
  assert.equal(unknown.status, 422);
  assert.equal(errorOf(unknown).code, 'unknown_inputs');
  assert.deepEqual(errorOf(unknown).details.unknown, ['bogus']);
  const declared = errorOf(unknown).details.declared as Array<{ name: string; value_type: string }>;
  assert.ok(declared.some((i) => i.name === 'growth_rate' && i.value_type === 'number'), JSON.stringify(declared));
  assert.match(errorOf(unknown).message, /: bogus\. It declares .*growth_rate \(number\)/);
  const bad = await prepare(lab.owner.key, { inputs: { growth_rate: 5 } });
  assert.equal(bad.status, 201, bad.text);
  assert.equal(bad.body.status, 'blocked');
  assert.deepEqual(bad.body.findings.map((f: any) => [f.code, f.path]), [['invalid_input_value', 'inputs.growth_rate']]);
  const blocked = await execute(lab.owner.key, bad.body);
  assert.equal(blocked.status, 409);
  assert.equal(errorOf(blocked).code, 'plan_blocked');
  const notHosted = await prepare(lab.owner.key, { reference: `${lab.owner.account.namespace}/nothing-here@1.0.0` });
  assert.equal(notHosted.status, 404);
  assert.equal(errorOf(notHosted).code, 'release_not_found');
});

test('only the key client that planned it executes it; it runs to completion with outputs and artifacts by port; another account sees nothing of it', { timeout: 120_000 }, async () => {
  const plan = await readyPlan(lab.owner.key, { inputs: { growth_rate: 0.15 }, seed: 3 });
  // A second key of the same account is another OAuth client (rule 12).
  const other = await createKey(testDb(), { accountId: lab.owner.account.id, principalId: lab.owner.principalId, scopes: SCOPES });
  const otherClient = await execute(other.secret, plan);
  assert.equal(otherClient.status, 403, otherClient.text);
  assert.equal(errorOf(otherClient).type, 'permission_error');
  assert.equal(errorOf(otherClient).code, 'client_mismatch');
  const foreign = await execute(stranger.key, plan);
  assert.equal(foreign.status, 404);
  assert.equal(errorOf(foreign).code, 'plan_not_found');

  const before = await getBalances(testDb(), lab.owner.account.id);
  const started = await execute(lab.owner.key, plan);
  assert.equal(started.status, 201, started.text);
  const inv = started.body;
  assert.match(inv.invocation_id, /^inv_/);
  assert.equal(inv.object, 'hosted_invocation');
  assert.equal(inv.reference, lab.reference);
  assert.equal(inv.sha256, lab.sha256);
  assert.equal(inv.inputs_sha256, digestJson({ growth_rate: 0.15 }));
  assert.equal(inv.seed, 3);
  assert.equal(inv.credits_reserved, plan.estimated_max_usd);
  const again = await execute(lab.owner.key, plan);
  assert.equal(again.status, 409);
  assert.equal(errorOf(again).code, 'plan_unavailable');
  assert.equal(errorOf(again).details.result_ref, `invocation:${inv.invocation_id}`);

  const done = await endedInvocation(inv.invocation_id, lab.owner.key);
  assert.equal(done.status, 'completed', JSON.stringify(done.error));
  assert.equal(typeof done.outputs.final_size, 'number');
  assert.ok(done.attempts >= 1 && done.started_at && done.finished_at);
  assert.ok(done.credits_settled > 0 && done.credits_settled <= done.credits_reserved, `settled ${done.credits_settled} of ${done.credits_reserved}`);
  const spent = (await getBalances(testDb(), lab.owner.account.id)).available_micros;
  assert.equal(before.available_micros - spent, Math.round(done.credits_settled * 1e6), 'charged what was settled, once');
  const csv = done.artifacts.find((a: any) => a.file_name === 'size.csv');
  assert.deepEqual(Object.keys(csv).sort(), ['content_type', 'file_name', 'format', 'port', 'sha256', 'size_bytes']);
  assert.equal(csv.port, 'size');

  const identity = await call('GET', `/hosted-invocations/${inv.invocation_id}/artifacts/size/metadata`, { key: lab.owner.key });
  assert.equal(identity.status, 200, identity.text);
  assert.equal(identity.body.sha256, csv.sha256);
  assert.equal(identity.body.content, undefined, 'identities only unless asked');
  const content = await call('GET', `/hosted-invocations/${inv.invocation_id}/artifacts/size/metadata?include_content=true`, { key: lab.owner.key });
  assert.equal(content.status, 200, content.text);
  assert.equal(content.body.truncated, false);
  assert.equal(createHash('sha256').update(content.body.content).digest('hex'), csv.sha256, 'the bytes hash to the identity');
  assert.equal(Buffer.byteLength(content.body.content), csv.size_bytes);
  const noPort = await call('GET', `/hosted-invocations/${inv.invocation_id}/artifacts/nothing/metadata`, { key: lab.owner.key });
  assert.equal(noPort.status, 404);
  assert.equal(errorOf(noPort).code, 'artifact_not_found');

  const ended = await call('POST', `/hosted-invocations/${inv.invocation_id}/cancel`, { key: lab.owner.key });
  assert.equal(ended.status, 200);
  assert.equal(ended.body.status, 'completed', 'a terminal invocation stays unchanged');
  assert.deepEqual(ended.body.warnings.map((w: any) => w.code), ['invocation_terminal']);
  assert.equal(ended.body.finished_at, done.finished_at);

  // Another account, even one that may invoke the same public deployment, sees nothing of it.
  const missing = await call('GET', `/hosted-invocations/${newId('inv')}`, { key: stranger.key });
  assert.equal(missing.status, 404);
  for (const [method, url] of [['GET', `/hosted-invocations/${inv.invocation_id}`], ['POST', `/hosted-invocations/${inv.invocation_id}/cancel`], ['GET', `/hosted-invocations/${inv.invocation_id}/artifacts/size/metadata`]] as const) {
    const res = await call(method, url, { key: stranger.key });
    assert.equal(res.status, 404, `${method} ${url}`);
    assert.deepEqual(sameAs404(res), sameAs404(missing), 'answered exactly like a missing one');
  }
});

test('with Prefer: wait the execution answers the invocation once it has ended, as GET gives it; one that outlasts the wait as it stands then', { timeout: 120_000 }, async () => {
  const { plan_id, plan_sha256 } = await readyPlan(lab.owner.key, { inputs: { growth_rate: 0.15 }, seed: 3 });
  const asked = Date.now();
  const waited = await call('POST', '/hosted-invocations', { key: lab.owner.key, headers: { Prefer: 'wait=30' }, body: { plan_id, plan_sha256 } });
  assert.equal(waited.status, 201, waited.text);
  // Woken by the notice of its ending, not by the end of the wait (a read at 30 s would find it ended too).
  assert.ok(Date.now() - asked < 10_000, `answered after ${Date.now() - asked} ms`);
  assert.equal(waited.headers.get('preference-applied'), 'wait=30');
  assert.equal(waited.body.status, 'completed', 'answered once it ended');
  assert.equal(typeof waited.body.outputs.final_size, 'number');
  assert.ok(waited.body.finished_at && waited.body.credits_settled > 0, 'ended and settled');
  const read = (await call('GET', `/hosted-invocations/${waited.body.invocation_id}`, { key: lab.owner.key })).body;
  assert.deepEqual({ ...waited.body, request_id: null }, { ...read, request_id: null }, 'the invocation, and what comes next for it, as GET gives them');
  assert.deepEqual(waited.body.next_actions.map((a: any) => a.tool), waited.body.artifacts.map(() => 'hosted_invocation_artifact_get'));

  // Three seconds of windows against a wait of one.
  const slow = await readyPlan(lab.owner.key, { inputs: { growth_rate: 0.15, window_delay: 0.4 } });
  const t0 = Date.now();
  const outlasting = await call('POST', '/hosted-invocations', { key: lab.owner.key, headers: { Prefer: 'wait=1' }, body: { plan_id: slow.plan_id, plan_sha256: slow.plan_sha256 } });
  assert.equal(outlasting.status, 201, outlasting.text);
  assert.ok(Date.now() - t0 >= 1000, 'it waited the second asked for');
  assert.equal(outlasting.headers.get('preference-applied'), 'wait=1');
  assert.ok(['queued', 'running'].includes(outlasting.body.status), outlasting.body.status);
  assert.deepEqual(outlasting.body.next_actions.map((a: any) => a.tool), ['hosted_invocation_get']);
  assert.equal((await endedInvocation(outlasting.body.invocation_id, lab.owner.key)).status, 'completed');
});

test("sharing a lab never shows a stranger's invocation to its owner; an account that cannot cover one gets 402", { timeout: 60_000 }, async () => {
  const theirs = await execute(stranger.key, await readyPlan(stranger.key, { inputs: { growth_rate: 0.05 } }));
  assert.equal(theirs.status, 201, theirs.text);
  const ownerRead = await call('GET', `/hosted-invocations/${theirs.body.invocation_id}`, { key: lab.owner.key });
  assert.equal(ownerRead.status, 404);
  assert.equal(errorOf(ownerRead).code, 'invocation_not_found');
  const own = await call('GET', `/hosted-invocations/${theirs.body.invocation_id}`, { key: stranger.key });
  assert.equal(own.status, 200);
  // Settled before the next test reads the stranger's balance.
  assert.equal((await endedInvocation(theirs.body.invocation_id, stranger.key)).status, 'completed');

  const broke = await newAccount();
  const refused = await execute(broke.key, await readyPlan(broke.key));
  assert.equal(refused.status, 402);
  assert.equal(errorOf(refused).code, 'insufficient_credits');
  assert.equal(await testDb()('hosted_invocations').where({ account_id: broke.account.id }).count('* as n').first().then((r: any) => Number(r.n)), 0);
});

test("spend caps bound invocations: under a key's per-run cap the plan runs shorter; what it costs counts this month; past the monthly cap plans are blocked and the database refuses one", { timeout: 120_000 }, async () => {
  const who = await newAccount({ usd: 5 });
  // cpu-small is $0.00001/s: a $0.0006 per-run cap pays for 60 s.
  await admin('caps', 'set', '--account', who.account.namespace, '--key', who.keyId, '--per-run-usd', '0.0006');
  const capped = await readyPlan(who.key, { inputs: { growth_rate: 0.1 } });
  assert.equal(capped.compute.max_seconds, 60);
  assert.equal(capped.estimated_max_usd, 0.0006);
  assert.ok(capped.findings.some((f: { code: string }) => f.code === 'spend_cap_applies'));
  const res = await execute(who.key, capped);
  assert.equal(res.status, 201, res.text);
  const done = await endedInvocation(res.body.invocation_id, who.key);
  assert.equal(done.status, 'completed');
  const spent = (await call('GET', '/account', { key: who.key })).body.spend_caps;
  assert.equal(spent.key.month_spent_usd, done.credits_settled, 'the invocation counts against the key that made it');
  assert.equal(spent.account.month_spent_usd, done.credits_settled);
  // One that runs past what the cap pays for is stopped there: cancelled with spend_cap_reached, charged at most the cap.
  await admin('caps', 'set', '--account', who.account.namespace, '--key', who.keyId, '--per-run-usd', '0.00003');
  const short = await readyPlan(who.key, { inputs: { growth_rate: 0.1, window_delay: 1 } });
  assert.equal(short.compute.max_seconds, 3);
  const stopped = await endedInvocation((await execute(who.key, short)).body.invocation_id, who.key);
  assert.deepEqual([stopped.status, stopped.error?.code], ['cancelled', 'spend_cap_reached'], JSON.stringify(stopped.error));
  assert.ok(stopped.credits_settled > 0 && stopped.credits_settled <= 0.00003, `charged ${stopped.credits_settled}`);
  const total = Math.round((done.credits_settled + stopped.credits_settled) * 1e6) / 1e6;

  await admin('caps', 'set', '--account', who.account.namespace, '--key', who.keyId, '--per-run-usd', 'none', '--monthly-usd', String(total));
  const blocked = await prepare(who.key, { inputs: { growth_rate: 0.1 } });
  assert.equal(blocked.status, 201, blocked.text);
  assert.equal(blocked.body.status, 'blocked');
  assert.ok(blocked.body.findings.some((f: { code: string; message: string }) => f.code === 'spend_cap_reached' && /key's monthly cap/.test(f.message)));
  // Accepted past the plan's check (as a concurrent acceptance would be), the database refuses it.
  const inputs = { growth_rate: 0.1 };
  const plan = await createPlan(testDb(), { accountId: who.account.id, kind: 'hosted_invocation', proposal: { inputs }, findings: [], ttlSeconds: 600 });
  const key = await testDb()('api_keys').where({ id: who.keyId }).first('client_id');
  await assert.rejects(acceptInvocation(testDb(), {
    id: newId('inv'), account_id: who.account.id, key_id: who.keyId, client_id: key.client_id, lab_id: lab.labId, hosting_generation: 1, reference: lab.reference, package_sha256: lab.sha256,
    compute_profile: 'cpu-small', inputs, inputs_sha256: digestJson(inputs), seed: 1, max_seconds: 60, reserved_micros: 600, plan_id: plan.id,
  }, null), (err: { code?: string }) => err.code === 'SLCAP');
  assert.equal(Number((await getBalances(testDb(), who.account.id)).reserved_micros), 0, 'nothing stays reserved');
});

test('cancelling a queued invocation ends it cancelled with nothing charged; cancelling again changes nothing', async () => {
  // Accepted in Postgres but never started: it stays queued until cancelled.
  const inputs = { growth_rate: 0.1 };
  const plan = await createPlan(testDb(), { accountId: stranger.account.id, kind: 'hosted_invocation', proposal: { inputs }, findings: [], ttlSeconds: 600 });
  const balance = await getBalances(testDb(), stranger.account.id);
  const id = newId('inv');
  const key = await testDb()('api_keys').where({ id: stranger.keyId }).first('client_id');
  await acceptInvocation(testDb(), {
    id, account_id: stranger.account.id, client_id: key.client_id, lab_id: lab.labId, hosting_generation: 1, reference: lab.reference, package_sha256: lab.sha256,
    compute_profile: 'cpu-small', inputs, inputs_sha256: digestJson(inputs), seed: 1, max_seconds: 60, reserved_micros: 600, plan_id: plan.id,
  }, null);
  // Recorded as its workflow's (so the workers' recovery leaves it), with none there.
  await markWorkflowStarted(testDb(), id);
  const queued = await call('GET', `/hosted-invocations/${id}`, { key: stranger.key });
  assert.equal(queued.body.status, 'queued');
  assert.equal(queued.body.credits_reserved, 0.0006);
  const cancelled = await call('POST', `/hosted-invocations/${id}/cancel`, { key: stranger.key });
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.equal(cancelled.body.status, 'cancelled');
  assert.equal(cancelled.body.credits_settled, 0);
  assert.ok(cancelled.body.finished_at);
  assert.deepEqual(await getBalances(testDb(), stranger.account.id), balance, 'the reservation is released whole');
  const again = await call('POST', `/hosted-invocations/${id}/cancel`, { key: stranger.key });
  assert.equal(again.status, 200);
  assert.equal(again.body.status, 'cancelled');
  assert.equal(again.body.finished_at, cancelled.body.finished_at, 'unchanged');
});

test('a paused deployment blocks plans (deployment_paused) and refuses an approved one (409); resumed, it executes; retired, deployment_unavailable', { timeout: 180_000 }, async () => {
  const approved = await readyPlan(lab.owner.key, { inputs: { growth_rate: 0.1 } });
  const ready = await hostingOf();
  assert.equal((await call('PATCH', `/labs/${lab.labId}/hosting`, { key: lab.owner.key, body: { revision: ready.revision, action: 'pause' } })).status, 200);
  const paused = await waitForStatus('paused');
  const blocked = await prepare(lab.owner.key);
  assert.equal(blocked.status, 201, blocked.text);
  assert.equal(blocked.body.status, 'blocked');
  assert.equal(blocked.body.findings[0].code, 'deployment_paused');
  const refused = await execute(lab.owner.key, approved);
  assert.equal(refused.status, 409);
  assert.equal(errorOf(refused).code, 'deployment_paused');

  assert.equal((await call('PATCH', `/labs/${lab.labId}/hosting`, { key: lab.owner.key, body: { revision: paused.revision, action: 'resume' } })).status, 200);
  const resumed = await waitForStatus('ready');
  const runs = await execute(lab.owner.key, approved);
  assert.equal(runs.status, 201, runs.text);

  const late = await readyPlan(lab.owner.key);
  assert.equal((await call('PATCH', `/labs/${lab.labId}/hosting`, { key: lab.owner.key, body: { revision: resumed.revision, action: 'retire' } })).status, 200);
  await waitForStatus('retired');
  const gone = await execute(lab.owner.key, late);
  assert.equal(gone.status, 409);
  assert.equal(errorOf(gone).code, 'deployment_unavailable');
  const after = await prepare(lab.owner.key);
  assert.equal(after.body.status, 'blocked', after.text);
  assert.equal(after.body.findings[0].code, 'deployment_unavailable');
});

test("a file input is the invoker's own, by file_id: staged for that invocation alone, its outputs what the file holds; another account's file is 404 like a missing one", { timeout: 180_000 }, async () => {
  const reader = await hostedLabOwner(path.join(REPO_ROOT, 'test/fixtures/labs/csv-reader'));
  hosted.push({ key: reader.owner.key, labId: reader.labId });
  const hosting = await call('POST', `/labs/${reader.labId}/hosting-plans`, {
    key: reader.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: reader.reference, sha256: reader.sha256 } },
  });
  assert.equal((await call('POST', '/hosting-requests', { key: reader.owner.key, body: { plan_id: hosting.body.plan_id, plan_sha256: hosting.body.plan_sha256 } })).status, 201);
  await until(120_000, async () => ((await call('GET', `/labs/${reader.labId}/hosting`, { key: reader.owner.key })).body.status === 'ready' ? true : undefined));
  const upload = async (key: string, text: string) => {
    const form = new FormData();
    form.append('file', new Blob([text]), 'counts.csv');
    return (await (await fetch(`${BASE_URL}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form })).json()) as { file_id: string };
  };
  const invokeWith = async (key: string, table: string) => call('POST', '/hosted-invocation-plans', {
    key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { reference: reader.reference, sha256: reader.sha256, inputs: { table } },
  });

  // Two callers' files one after the other on the same warm instance: each sees its own.
  for (const [text, rows, total] of [['gene,count\nlacI,12\ntetR,7\n', 2, 19], ['gene,count\na,1\nb,2\nc,3\nd,4\n', 4, 10]] as const) {
    const f = await upload(reader.owner.key, text);
    const plan = await invokeWith(reader.owner.key, f.file_id);
    assert.equal(plan.status, 201, plan.text);
    assert.equal(plan.body.status, 'ready', plan.text);
    assert.deepEqual(plan.body.inputs, { table: f.file_id }, 'the plan binds the file by its id');
    const started = await execute(reader.owner.key, plan.body);
    assert.equal(started.status, 201, started.text);
    const done = await endedInvocation(started.body.invocation_id, reader.owner.key);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    assert.deepEqual([done.outputs.rows, done.outputs.total], [rows, total]);
  }
  // Nothing staged for an invocation outlives it.
  const deployments = workerTmpDirs('silico-deployment-');
  const staged = deployments.flatMap((d) => readdirSync(d).filter((i) => i.startsWith('instance-')).flatMap((i) => readdirSync(path.join(d, i)).filter((x) => x.startsWith('inputs-'))));
  assert.deepEqual(staged, []);

  const theirs = await upload(stranger.key, 'gene,count\nx,1\n');
  const foreign = await invokeWith(reader.owner.key, theirs.file_id);
  const missing = await invokeWith(reader.owner.key, crypto.randomUUID());
  assert.equal(foreign.status, 404, foreign.text);
  assert.equal(errorOf(foreign).code, 'file_not_found');
  assert.equal(errorOf(foreign).param, 'inputs.table');
  assert.deepEqual(sameAs404(foreign), sameAs404(missing));
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { operatorView } from '../operatorView.ts';
import { admin, call, closeTestDb, errorOf, hostedLabOwner, newAccount, testDb, testObjects, until } from '../helpers.ts';

// The hosting lifecycle on the real stack: plan, request, deployment checks, operator
// review for public hosting, ready, pause, resume and retire, each change recorded in
// Postgres (GET .../hosting) and in the lab's lifecycle workflow.

after(closeTestDb);

type Owner = Awaited<ReturnType<typeof newAccount>>;

async function plan(o: Awaited<ReturnType<typeof hostedLabOwner>>, extra: Record<string, unknown> = {}) {
  const res = await call('POST', `/labs/${o.labId}/hosting-plans`, {
    key: o.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: o.reference, sha256: o.sha256 }, ...extra },
  });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function request(o: Awaited<ReturnType<typeof hostedLabOwner>>, p: any) {
  const res = await call('POST', '/hosting-requests', { key: o.owner.key, body: { plan_id: p.plan_id, plan_sha256: p.plan_sha256 } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function hostingOf(o: { owner: Owner; labId: string }) {
  const res = await call('GET', `/labs/${o.labId}/hosting`, { key: o.owner.key });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

const waitForStatus = (o: { owner: Owner; labId: string }, status: string, ms = 120_000) =>
  until(ms, async () => {
    const h = await hostingOf(o);
    return h.status === status ? h : undefined;
  });

async function patch(o: { owner: Owner; labId: string }, revision: number, action: string) {
  return call('PATCH', `/labs/${o.labId}/hosting`, { key: o.owner.key, body: { revision, action } });
}

async function makePublic(o: { owner: Owner; labId: string }) {
  const res = await call('PUT', `/labs/${o.labId}/visibility`, { key: o.owner.key, body: { visibility: 'public' } });
  assert.equal(res.status, 200, res.text);
}

/** Private smoke fixtures no caller could guess: a leak of either value is a leak of the fixtures. */
const SMOKE = { growth_rate: 0.4321, noise: 0.0123 };

/** The noisy-growth fixture with `smoke: {inputs}` declared, as an author would. */
async function labWithSmokeFixtures(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-smoke-lab-'));
  await cp(path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth'), dir, { recursive: true });
  const manifest = await readFile(path.join(dir, 'lab.yaml'), 'utf8');
  await writeFile(path.join(dir, 'lab.yaml'), `${manifest}smoke:\n  inputs:\n    growth_rate: ${SMOKE.growth_rate}\n    noise: ${SMOKE.noise}\n`);
  return dir;
}

let lab: Awaited<ReturnType<typeof hostedLabOwner>>;
before(async () => {
  lab = await hostedLabOwner();
});

test('the whole private lifecycle: plan, request, checks, ready, pause, resume, retire; every change in GET and in the workflow history', { timeout: 240_000 }, async () => {
  const p = await plan(lab, { min_instances: 1, max_instances: 2, visibility: 'private' });
  assert.equal(p.object, 'hosting_plan');
  assert.deepEqual(p.release, { release_id: p.release.release_id, reference: lab.reference, sha256: lab.sha256 });
  assert.deepEqual(p.approval, { required: false, reasons: [] });
  assert.equal(p.compute.min_instances, 1);
  assert.equal(p.cost.hourly_usd, 3600 * 10 / 1e6, 'one warm cpu-small instance for an hour');
  assert.match(p.cost.caveat, /per hour/);
  assert.ok(p.expires_at);
  assert.deepEqual(p.smoke_inputs, {}, 'the owner sees the private fixtures (none declared here)');

  const requested = await request(lab, p);
  assert.ok(['requested', 'checking'].includes(requested.status), requested.status);
  assert.equal(requested.ready, false, 'a recorded request is not a ready deployment');
  const again = await call('POST', '/hosting-requests', { key: lab.owner.key, body: { plan_id: p.plan_id, plan_sha256: p.plan_sha256 } });
  assert.equal(again.status, 409);
  assert.equal(errorOf(again).code, 'plan_unavailable');

  const ready = await waitForStatus(lab, 'ready');
  assert.deepEqual(ready.checks.map((c: any) => [c.check, c.status]), [['release_bytes', 'passed'], ['environment', 'passed'], ['smoke_run', 'passed']]);
  assert.equal(ready.release.reference, lab.reference);

  const stale = await patch(lab, ready.revision - 1, 'pause');
  assert.equal(stale.status, 409);
  assert.equal(errorOf(stale).code, 'revision_conflict');
  const badMove = await patch(lab, ready.revision, 'resume');
  assert.equal(badMove.status, 409);
  assert.equal(errorOf(badMove).code, 'invalid_state');

  // The same change sent twice at one revision (a retry whose answer was lost): it is one
  // update, applied once, and both hear its outcome.
  const [a, b] = await Promise.all([patch(lab, ready.revision, 'pause'), patch(lab, ready.revision, 'pause')]);
  assert.deepEqual([a.status, b.status], [200, 200], `${a.text} ${b.text}`);
  for (const applied of [a, b]) {
    assert.equal(applied.body.revision, ready.revision + 1, 'applied once');
    assert.equal(applied.body.pending_action === 'pause' || applied.body.status === 'paused', true, 'the response shows what was recorded');
  }
  const paused = await waitForStatus(lab, 'paused');
  assert.equal(paused.revision, ready.revision + 1);
  const resumed = await patch(lab, paused.revision, 'resume');
  assert.equal(resumed.status, 200, resumed.text);
  const readyAgain = await waitForStatus(lab, 'ready');
  // Two different changes against the same revision: exactly one applies.
  const [x, y] = await Promise.all([patch(lab, readyAgain.revision, 'pause'), patch(lab, readyAgain.revision, 'retire')]);
  assert.deepEqual([x.status, y.status].sort(), [200, 409], `${x.text} ${y.text}`);
  assert.equal(errorOf(x.status === 409 ? x : y).code, 'revision_conflict');
  if (x.status === 200) {
    const pausedAgain = await waitForStatus(lab, 'paused');
    assert.equal((await patch(lab, pausedAgain.revision, 'retire')).status, 200);
  }
  const retired = await waitForStatus(lab, 'retired');
  assert.ok(retired.ended_at);
  const statuses = retired.history.map((e: any) => e.status);
  for (const s of ['requested', 'checking', 'ready', 'paused', 'retiring', 'retired']) assert.ok(statuses.includes(s), `history has ${s}: ${statuses}`);
  const ended = await patch(lab, retired.revision, 'resume');
  assert.equal(ended.status, 409);

  // The workflow's own history holds the same changes: an accepted update per PATCH that applied.
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  try {
    const client = new Client({ connection });
    const history = await client.workflow.getHandle(retired.workflow_id).fetchHistory();
    const accepted = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
    // The pause sent twice is one update; then resume, and retire (after a pause, when it won the race).
    assert.equal(accepted, x.status === 200 ? 4 : 3, 'pause, resume, (pause,) retire');
  } finally {
    await connection.close();
  }

  // A retired lab may be hosted again, as a new lifecycle.
  const second = await request(lab, await plan(lab));
  assert.equal(second.revision, 1);
  const readyNew = await waitForStatus(lab, 'ready');
  assert.ok(!readyNew.history.some((e: any) => e.status === 'retired'), 'history of the new lifecycle only');
  assert.equal((await patch(lab, readyNew.revision, 'retire')).status, 200);
  await waitForStatus(lab, 'retired');
});

test('the whole public lifecycle: plan, request, checks, review, ready, invoke, artifacts, pause (invocations refused), resume, retire, each change in GET and in the workflow history; a rejection ends another clearly', { timeout: 360_000 }, async () => {
  const smokeDir = await labWithSmokeFixtures();
  const pub = await hostedLabOwner(smokeDir).finally(() => rm(smokeDir, { recursive: true, force: true }));
  const tooWide = await plan(pub, { visibility: 'public' });
  assert.equal(tooWide.status, 'blocked', 'public hosting of a private release');
  assert.equal(tooWide.findings[0].code, 'visibility_exceeds_release');
  await makePublic(pub);
  const p = await plan(pub, { visibility: 'public' });
  assert.deepEqual(p.approval, { required: true, reasons: ['public hosting'] });
  assert.deepEqual(p.smoke_inputs, SMOKE, 'the owner sees the private fixtures the checks will run');
  await request(pub, p);
  const waiting = await waitForStatus(pub, 'awaiting_review');
  assert.equal(waiting.ready, false);
  // What an operator reads of the lifecycle in the Temporal UI while it waits: what to run.
  const seen = await operatorView(waiting.workflow_id, { state: true });
  assert.equal(seen.summary, `hosting of ${pub.reference} on ${waiting.compute_profile} (${waiting.min_instances}–${waiting.max_instances} instances, public) for ${pub.owner.account.id}`);
  assert.match(seen.current!, new RegExp(`^\\*\\*awaiting_review\\*\\* \\(revision 1, generation \\d+\\): waiting for the operator's review \\(public or GPU hosting\\)\\.\n\nReview it: \`npm run admin -- hosting approve ${pub.labId}\` \\(or \`reject\`\\)\\.$`));
  assert.deepEqual([seen.state!.status, seen.state!.approval, seen.state!.lab_id], ['awaiting_review', 'awaiting', pub.labId]);
  const listed = await admin('hosting', 'list', '--status', 'awaiting_review');
  assert.ok(listed.some((h: any) => h.lab_id === pub.labId));
  await assert.rejects(admin('hosting', 'approve', lab.labId), 'a hosting not awaiting review cannot be approved');
  await admin('hosting', 'approve', pub.labId, '--note', 'looks fine');
  const ready = await waitForStatus(pub, 'ready');
  assert.equal(ready.approval.decision, 'approved');
  assert.equal(ready.approval.note, 'looks fine');
  assert.match(ready.checks.find((c: any) => c.check === 'smoke_run').detail, /^Private smoke fixtures: /);
  // Anyone may read a public hosting's contract, never its smoke fixtures.
  const stranger = await newAccount({ usd: 1 });
  const hosted = await call('GET', `/hosted-releases/${encodeURIComponent(pub.reference)}?sha256=${pub.sha256}`, { key: stranger.key });
  assert.equal(hosted.status, 200, hosted.text);
  assert.deepEqual(hosted.body.inputs.map((i: any) => i.name), ['growth_rate', 'noise', 'fail', 'window_delay']);
  const shown = JSON.stringify(hosted.body);
  assert.ok(!shown.includes('smoke') && !shown.includes(String(SMOKE.growth_rate)) && !shown.includes(String(SMOKE.noise)), shown);
  const strangersPlan = await call('POST', `/labs/${pub.labId}/hosting-plans`, { key: stranger.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: pub.reference, sha256: pub.sha256 } } });
  assert.equal(strangersPlan.status, 404, 'only the owner plans a lab\'s hosting, and so sees its fixtures there');
  const wrongDigest = await call('GET', `/hosted-releases/${encodeURIComponent(pub.reference)}?sha256=${'0'.repeat(64)}`, { key: stranger.key });
  assert.equal(wrongDigest.status, 422);
  assert.equal(errorOf(wrongDigest).code, 'checksum_mismatch');

  // Served: a stranger invokes the public deployment and reads the artifact by its identity.
  const invocationPlan = async () => {
    const res = await call('POST', '/hosted-invocation-plans', { key: stranger.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { reference: pub.reference, sha256: pub.sha256, inputs: { growth_rate: 0.2 } } });
    assert.equal(res.status, 201, res.text);
    return res.body;
  };
  const invoked = async () => {
    const planned = await invocationPlan();
    assert.equal(planned.status, 'ready', JSON.stringify(planned.findings));
    const started = await call('POST', '/hosted-invocations', { key: stranger.key, body: { plan_id: planned.plan_id, plan_sha256: planned.plan_sha256 } });
    assert.equal(started.status, 201, started.text);
    const done = await until(60_000, async () => {
      const r = (await call('GET', `/hosted-invocations/${started.body.invocation_id}`, { key: stranger.key })).body;
      return ['completed', 'failed', 'cancelled', 'expired'].includes(r.status) ? r : undefined;
    });
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    return done;
  };
  const served = await invoked();
  const artifact = await call('GET', `/hosted-invocations/${served.invocation_id}/artifacts/size/metadata?include_content=true`, { key: stranger.key });
  assert.equal(artifact.status, 200, artifact.text);
  assert.equal(createHash('sha256').update(artifact.body.content).digest('hex'), artifact.body.sha256);
  assert.equal((await call('GET', `/hosted-invocations/${served.invocation_id}`, { key: pub.owner.key })).status, 404, 'the owner does not see a stranger\'s invocation');

  // Paused, it refuses invocations; resumed, it serves again; then retired.
  assert.equal((await patch(pub, ready.revision, 'pause')).status, 200);
  const paused = await waitForStatus(pub, 'paused');
  const refused = await invocationPlan();
  assert.deepEqual([refused.status, refused.findings[0].code], ['blocked', 'deployment_paused']);
  assert.equal((await patch(pub, paused.revision, 'resume')).status, 200);
  const resumed = await waitForStatus(pub, 'ready');
  await invoked();
  assert.equal((await patch(pub, resumed.revision, 'retire')).status, 200);
  const retired = await waitForStatus(pub, 'retired');
  const statuses = retired.history.map((e: any) => e.status);
  const expected = ['requested', 'checking', 'awaiting_review', 'ready', 'paused', 'ready', 'retiring', 'retired'];
  assert.deepEqual(statuses.filter((x: string, i: number) => x !== statuses[i - 1]), expected, 'every status, in order');
  const lifecycle = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  try {
    const history = await new Client({ connection: lifecycle }).workflow.getHandle(retired.workflow_id).fetchHistory();
    const accepted = (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
    assert.equal(accepted, 4, 'the review, pause, resume and retire, each an update the workflow accepted');
  } finally {
    await lifecycle.close();
  }

  const rej = await hostedLabOwner();
  await makePublic(rej);
  await request(rej, await plan(rej, { visibility: 'public' }));
  await waitForStatus(rej, 'awaiting_review');
  await admin('hosting', 'reject', rej.labId, '--note', 'not for public use');
  const rejected = await waitForStatus(rej, 'rejected');
  assert.equal(rejected.approval.decision, 'rejected');
  assert.ok(rejected.ended_at);
  // The lifecycle itself ends (its review answered first), not only its record.
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  try {
    const ending = await new Client({ connection }).workflow.getHandle(rejected.workflow_id).result();
    assert.equal(ending, 'rejected');
  } finally {
    await connection.close();
  }
});

test('GPU hosting needs an operator review even when private, and its plan says why and what an hour costs', async () => {
  const p = await plan(lab, { compute_profile_id: 'gpu-h100', visibility: 'private' });
  assert.equal(p.status, 'ready', JSON.stringify(p.findings));
  assert.deepEqual(p.approval, { required: true, reasons: ['GPU compute'] });
  assert.deepEqual([p.compute.profile, p.compute.kind, p.compute.gpu], ['gpu-h100', 'gpu', 'nvidia-h100-80gb']);
  assert.equal(p.cost.hourly_usd, 3600 * 1000 / 1e6, 'one warm H100 instance for an hour');
});

test('tampered release bytes fail the checks; the lifecycle ends failed and names the check', { timeout: 180_000 }, async () => {
  const bad = await hostedLabOwner();
  const release = await testDb()('releases').where({ account_id: bad.owner.account.id }).first();
  await testObjects().putObject(release.archive_key, Buffer.from('not the archive'));
  await request(bad, await plan(bad));
  const failed = await waitForStatus(bad, 'failed');
  const bytes = failed.checks.find((c: any) => c.check === 'release_bytes');
  assert.equal(bytes.status, 'failed');
  assert.match(failed.history.at(-1).message, /release_bytes/);
});

test('another account sees no hosting and cannot plan one; bad plans name the field', async () => {
  const stranger = await newAccount();
  const read = await call('GET', `/labs/${lab.labId}/hosting`, { key: stranger.key });
  const missing = await call('GET', '/labs/lab_00000000000000000000000000/hosting', { key: stranger.key });
  assert.equal(read.status, 404);
  assert.deepEqual({ ...errorOf(read), request_id: null }, { ...errorOf(missing), request_id: null });
  const foreignPlan = await call('POST', `/labs/${lab.labId}/hosting-plans`, { key: stranger.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: lab.reference, sha256: lab.sha256 } } });
  assert.equal(foreignPlan.status, 404);
  const noKey = await call('POST', `/labs/${lab.labId}/hosting-plans`, { key: lab.owner.key, body: { release: { reference: lab.reference, sha256: lab.sha256 } } });
  assert.equal(noKey.status, 400);
  const digest = await call('POST', `/labs/${lab.labId}/hosting-plans`, { key: lab.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: lab.reference, sha256: 'a'.repeat(64) } } });
  assert.equal(digest.status, 422);
  assert.equal(errorOf(digest).param, 'release.sha256');
  const bounds = await call('POST', `/labs/${lab.labId}/hosting-plans`, { key: lab.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: lab.reference, sha256: lab.sha256 }, min_instances: 3, max_instances: 2 } });
  assert.equal(bounds.status, 422);
  assert.equal(errorOf(bounds).param, 'max_instances');
  const privateHosted = await call('GET', `/hosted-releases/${encodeURIComponent(lab.reference)}?sha256=${lab.sha256}`, { key: stranger.key });
  assert.equal(privateHosted.status, 404);
});

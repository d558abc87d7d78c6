/**
 * Reuse at no cost: a run that is the same computation as a completed run of the account
 * (package, inputs, seed, compute profile, runtime) is answered from it when asked:
 * priced $0 in its plan, completed within its own POST /runs, its artifacts the source's
 * bytes, its provenance naming the source.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { call, closeTestDb, downloadArtifact, hostedLabOwner, newAccount, waitForRun } from '../helpers.ts';

const REF = 'platform/microbial-growth@1.0.0';
let owner: Awaited<ReturnType<typeof newAccount>>;
let source: { id: string; seed: number };

const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
const available = async (key: string) => (await call('GET', '/account', { key })).body.holdings.compute.available_usd as number;

before(async () => {
  owner = await newAccount({ usd: 10 });
  const res = await call('POST', '/runs', { key: owner.key, body: { ref: REF, inputs: { growth_rate: 0.3 }, seed: 7 }, headers: idem() });
  assert.ok(res.status < 300, res.text);
  const done = await waitForRun(owner.key, res.body.id);
  assert.equal(done.status, 'completed');
  source = { id: res.body.id, seed: 7 };
});
after(closeTestDb);

test('an identical run with reuse: true is priced $0, completes within its POST /runs, charges nothing, and its artifacts are the source\'s bytes', async (t) => {
  const plan = await call('POST', '/run-plans', { key: owner.key, body: { capability_ref: REF, inputs: { growth_rate: 0.3 }, seed: 7, reuse: true } });
  assert.equal(plan.status, 200, plan.text);
  assert.deepEqual(plan.body.reuse_of, { run_id: source.id });
  assert.equal(plan.body.estimated_max_usd, 0);
  assert.ok(plan.body.findings.some((f: { code: string }) => f.code === 'reused'));
  const before = await available(owner.key);
  const t0 = performance.now();
  const run = await call('POST', '/runs', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 }, headers: idem() });
  const ms = performance.now() - t0;
  assert.ok(run.status < 300, run.text);
  t.diagnostic(`the reused run was answered, completed, in ${ms.toFixed(0)} ms`);
  assert.equal(run.body.status, 'completed', `completed within the request itself (${ms.toFixed(0)} ms)`);
  assert.notEqual(run.body.id, source.id, 'a run of its own');
  assert.equal(run.body.credits_settled, 0);
  assert.equal(run.body.credits_reserved, 0);
  assert.equal(await available(owner.key), before, 'nothing reserved or charged');

  const [mine, theirs] = await Promise.all([run.body.id, source.id].map(async (id) => (await call('GET', `/runs/${id}/results`, { key: owner.key })).body));
  assert.equal(mine.provenance.reused_from, source.id);
  assert.deepEqual(mine.outputs, theirs.outputs);
  assert.equal(mine.provenance.seed, theirs.provenance.seed);
  assert.equal(mine.provenance.inputs_sha256, theirs.provenance.inputs_sha256);
  assert.deepEqual(mine.artifacts.map((a: { sha256: string }) => a.sha256).sort(), theirs.artifacts.map((a: { sha256: string }) => a.sha256).sort());
  for (const a of mine.artifacts as Array<{ artifact_id: string; sha256: string }>) {
    const bytes = await downloadArtifact(owner.key, run.body.id, a.artifact_id);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), a.sha256, 'the bytes re-hash to the source\'s sha256');
  }
  const events = (await call('GET', `/runs/${run.body.id}/events`, { key: owner.key })).body.items as Array<{ type: string; message: string; data: { status?: string } }>;
  assert.ok(events.some((e) => e.message.includes(`Answered from run ${source.id}`)));
  assert.equal(events.at(-1)!.data.status, 'completed');
});

test('without reuse the plan points the identical run out and runs as usual; without a seed, reuse takes the identical run\'s', async () => {
  const plain = await call('POST', '/run-plans', { key: owner.key, body: { capability_ref: REF, inputs: { growth_rate: 0.3 }, seed: 7 } });
  assert.equal(plain.body.reuse_of, null);
  assert.ok(plain.body.estimated_max_usd > 0);
  assert.ok(plain.body.findings.some((f: { code: string; message: string }) => f.code === 'identical_run_exists' && f.message.includes(source.id)));

  const anySeed = await call('POST', '/runs', { key: owner.key, body: { ref: REF, inputs: { growth_rate: 0.3 }, reuse: true }, headers: idem() });
  assert.equal(anySeed.body.status, 'completed', 'the direct form reuses too');
  const results = (await call('GET', `/runs/${anySeed.body.id}/results`, { key: owner.key })).body;
  assert.equal(results.provenance.reused_from, source.id);
  assert.equal(results.provenance.seed, source.seed, 'the source\'s seed is taken');
});

test('a different seed, input or profile is not the same computation: reuse: true then runs and is charged as usual', async () => {
  for (const body of [
    { capability_ref: REF, inputs: { growth_rate: 0.3 }, seed: 8, reuse: true },
    { capability_ref: REF, inputs: { growth_rate: 0.31 }, seed: 7, reuse: true },
  ]) {
    const plan = await call('POST', '/run-plans', { key: owner.key, body });
    assert.equal(plan.body.reuse_of, null, JSON.stringify(body));
    assert.ok(plan.body.estimated_max_usd > 0);
    assert.ok(plan.body.findings.some((f: { code: string }) => f.code === 'no_identical_run'));
  }
  const other = await newAccount({ usd: 1 });
  const foreign = await call('POST', '/run-plans', { key: other.key, body: { capability_ref: REF, inputs: { growth_rate: 0.3 }, seed: 7, reuse: true } });
  assert.equal(foreign.body.reuse_of, null, 'another account\'s runs are never reused');
  const run = await call('POST', '/runs', { key: owner.key, body: { ref: REF, inputs: { growth_rate: 0.3 }, seed: 9, reuse: true }, headers: idem() });
  assert.ok(['queued', 'running'].includes(run.body.status), `a run that executes, not answered at once: ${run.body.status}`);
  assert.equal((await waitForRun(owner.key, run.body.id)).status, 'completed');
  assert.equal((await call('GET', `/runs/${run.body.id}/results`, { key: owner.key })).body.provenance.reused_from, undefined, 'a run that ran names no source');
});

test('a public release\'s owner who allows reuse answers others\' identical runs; without the allowance, or for a private lab, nothing is shared', async () => {
  // Published through the API, so its lab (visibility, settings) is the owner's to set.
  const { owner: author, labId, reference: ref } = await hostedLabOwner();
  const lab = { lab_id: labId };
  const body = { capability_ref: ref, inputs: { growth_rate: 0.15 }, seed: 21, reuse: true };
  const own = await call('POST', '/runs', { key: author.key, body: { ref, inputs: body.inputs, seed: 21 }, headers: idem() });
  assert.equal((await waitForRun(author.key, own.body.id)).status, 'completed');
  const stranger = await newAccount({ usd: 5 });

  assert.equal((await call('PUT', `/labs/${lab.lab_id}/visibility`, { key: author.key, body: { visibility: 'public' } })).status, 200);
  const notAllowed = await call('POST', '/run-plans', { key: stranger.key, body });
  assert.equal(notAllowed.body.reuse_of, null, 'public, but its owner has not allowed reuse');

  assert.equal((await call('PATCH', `/labs/${lab.lab_id}`, { key: author.key, body: { content_settings: { allow_reuse: true } } })).status, 200);
  const plan = await call('POST', '/run-plans', { key: stranger.key, body });
  assert.deepEqual(plan.body.reuse_of, { run_id: own.body.id });
  assert.equal(plan.body.estimated_max_usd, 0);
  const run = await call('POST', '/runs', { key: stranger.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 }, headers: idem() });
  assert.equal(run.body.status, 'completed', run.text);
  const [mine, theirs] = await Promise.all([
    call('GET', `/runs/${run.body.id}/results`, { key: stranger.key }), call('GET', `/runs/${own.body.id}/results`, { key: author.key }),
  ]);
  assert.equal(mine.body.provenance.reused_from, own.body.id);
  assert.deepEqual(mine.body.artifacts.map((a: { sha256: string }) => a.sha256).sort(), theirs.body.artifacts.map((a: { sha256: string }) => a.sha256).sort());
  assert.equal((await call('GET', `/runs/${own.body.id}`, { key: stranger.key })).status, 404, 'the source stays its owner\'s');

  assert.equal((await call('PUT', `/labs/${lab.lab_id}/visibility`, { key: author.key, body: { visibility: 'private' } })).status, 200);
  const gone = await call('POST', '/run-plans', { key: (await newAccount({ usd: 1 })).key, body });
  assert.notEqual(gone.status, 200, 'a private lab is not even visible to others');
});

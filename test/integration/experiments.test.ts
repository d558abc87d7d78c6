import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { listedRuns } from '../studyRuns.ts';
import { call, closeTestDb, errorOf, fileBytes, newAccount, spawnWorker, testDb, until, useTestProfiles, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// Studies on the real stack: a whole study approved as one digest and reserved all or
// nothing, its runs started within the account's concurrency limit, compared from the
// completed runs' own outputs.

const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth');
/** Served only by workers this file starts, so one can be killed mid-study. */
const PROFILE = { id: 'test-studies', title: 'Test profile of the study suite', price_per_second_micros: 10, max_runtime_seconds: 120 };
useTestProfiles(PROFILE);
after(closeTestDb);

let owner: Awaited<ReturnType<typeof newAccount>>;
let ws: Awaited<ReturnType<typeof workspaceOfLab>>;
let worker: Awaited<ReturnType<typeof spawnWorker>> | undefined;
before(async () => {
  owner = await newAccount({ usd: 100 });
  ws = await workspaceOfLab(owner.key, 'Noisy growth', LAB);
  worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
});
after(async () => {
  await worker?.stop();
});

const arm = (label: string, extra: Record<string, unknown> = {}) => ({
  label, workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: PROFILE.id, max_runtime_seconds: 60, ...extra,
});

async function prepare(key: string, body: Record<string, unknown>) {
  const res = await call('POST', '/experiment-plans', { key, body });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

async function openStudy(key: string, body: Record<string, unknown>) {
  const plan = await prepare(key, body);
  assert.equal(plan.status, 'ready', JSON.stringify(plan.findings));
  const res = await call('POST', '/experiments', { key, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } });
  assert.equal(res.status, 200, res.text);
  // The answer is the study as it was accepted: every run queued, nothing settled.
  assert.deepEqual([res.body.run_totals.queued, res.body.run_totals.total, res.body.credits_settled], [plan.run_count, plan.run_count, 0]);
  return { plan, study: res.body };
}

async function waitForStudy(key: string, id: string, ms = 240_000): Promise<any> {
  return until(ms, async () => {
    const e = (await call('GET', `/experiments/${id}?include_runs=true`, { key })).body;
    return e.completed_at ? e : undefined;
  });
}

/** The comparison as the test computes it from each completed run's own results. */
async function expectedMetrics(key: string, runIds: string[]) {
  const values: Record<string, number[]> = {};
  for (const id of runIds) {
    const r = (await call('GET', `/runs/${id}/results`, { key })).body;
    if (r.status !== 'completed') continue;
    // The lab declares these two as numbers (`size` is a time series).
    for (const k of ['final_size', 'mean_growth']) if (typeof r.outputs[k] === 'number') (values[k] ??= []).push(r.outputs[k]);
  }
  // Student t quantiles at 0.975 from a table, not from the library the service uses.
  const T975: Record<number, number> = { 1: 12.706204736174698, 2: 4.302652729749464, 3: 3.182446305284263, 4: 2.7764451051977934 };
  return Object.fromEntries(Object.entries(values).map(([k, xs]) => {
    const n = xs.length;
    const mean = xs.reduce((a, b) => a + b, 0) / n;
    const sd = n > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : null;
    const half = sd === null ? null : T975[n - 1]! * sd / Math.sqrt(n);
    return [k, { n, mean, stddev: sd, min: Math.min(...xs), max: Math.max(...xs), ci95: half === null ? null : [mean - half, mean + half] }];
  }));
}

function assertClose(actual: unknown, expected: unknown, where: string): void {
  if (typeof expected === 'number') {
    assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${where}: ${actual} != ${expected}`);
  } else if (Array.isArray(expected)) {
    expected.forEach((x, i) => assertClose((actual as unknown[])[i], x, `${where}[${i}]`));
  } else if (expected && typeof expected === 'object') {
    for (const [k, v] of Object.entries(expected)) assertClose((actual as Record<string, unknown>)[k], v, `${where}.${k}`);
  } else {
    assert.equal(actual, expected, where);
  }
}

/** Another workspace of the same lab: an arm pointing there is another arm. */
async function otherWorkspace() {
  const other = await workspaceOfLab(owner.key, 'Other', LAB);
  return { workspace_id: other.workspace_id, revision_id: other.revision_id };
}

/** A newer revision of a workspace (a README added). */
async function nextRevision(workspaceId: string, head: string): Promise<string> {
  const change = await call('POST', `/workspaces/${workspaceId}/change-plans`, { key: owner.key, body: { base_revision_id: head, operations: [{ kind: 'file_put', path: 'NOTES.md', content: 'notes\n' }] } });
  assert.equal(change.status, 200, change.text);
  const rev = await call('POST', '/workspace-revisions', { key: owner.key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } });
  assert.equal(rev.status, 200, rev.text);
  return rev.body.revision_id;
}

test('a 3-arm study of 3 replicates completes; its comparison equals one computed from the runs, with CSV and chart', { timeout: 300_000 }, async () => {
  const { plan, study } = await openStudy(owner.key, {
    name: 'Growth rates', goal: 'Does the rate move the final size?',
    arms: [arm('slow', { inputs: { growth_rate: 0.05 }, replicates: 3, seed: 10 }), arm('medium', { inputs: { growth_rate: 0.1 }, replicates: 3, seed: 20 }), arm('fast', { inputs: { growth_rate: 0.2 }, replicates: 3, seed: 30 })],
  });
  assert.equal(plan.run_count, 9);
  assert.equal(plan.estimated_max_usd, 9 * 60 * 10 / 1e6);
  assert.deepEqual(plan.arms[1].seeds, [20, 21, 22]);
  assert.equal(study.status, 'running');
  assert.equal(study.run_totals.total, 9);
  const done = await waitForStudy(owner.key, study.id);
  assert.equal(done.status, 'completed');
  assert.equal(done.run_totals.completed, 9);
  for (const [i, a] of done.arms.entries()) {
    assert.equal(a.runs.length, 3);
    assert.deepEqual(a.runs.map((r: any) => r.seed).sort(), plan.arms[i].seeds);
    const expected = await expectedMetrics(owner.key, a.runs.map((r: any) => r.run_id));
    const got = done.comparison.arms[i];
    assert.equal(got.label, a.label);
    assert.equal(got.completed_runs, 3);
    assert.deepEqual(Object.keys(got.metrics).sort(), ['final_size', 'mean_growth']);
    assertClose(got.metrics, expected, `arm ${a.label}`);
  }
  assert.deepEqual(done.comparison.outputs, ['final_size', 'mean_growth']);
  assert.deepEqual(done.comparison.tests, [], 'Welch tests only for exactly two arms');
  // Each run is the lone run its arm would be: its own reservation and settlement.
  const runIds = done.arms.flatMap((a: any) => a.runs.map((r: any) => r.run_id));
  const run = (await call('GET', `/runs/${runIds[0]}`, { key: owner.key })).body;
  assert.equal(run.experiment_id, study.id);
  assert.equal(run.kind, 'managed');
  // Its runs listed: replicate 0 of every arm, then 1, and so on; no parameter set, nothing to sort by but their order.
  const listed = await listedRuns(owner.key, done.id, '', 4);
  assert.deepEqual(listed.map((r) => [r.position, r.arm, r.replicate, r.params, r.outputs, r.loss]), [0, 1, 2].flatMap((k) => ['slow', 'medium', 'fast'].map((arm, a) => [3 * k + a + 1, arm, k, null, null, null])));
  assert.deepEqual(listed.map((r) => r.run_id), (await listedRuns(owner.key, done.id, '&order=desc', 100)).map((r) => r.run_id).reverse());
  assert.equal(errorOf(await call('GET', `/experiments/${done.id}/runs?sort=loss`, { key: owner.key })).code, 'invalid_sort');
  // The comparison's CSV and chart are hashed files of the account.
  assert.deepEqual(done.artifacts.map((a: any) => a.file_name), ['comparison.csv', 'comparison.svg']);
  for (const a of done.artifacts) {
    const bytes = await fileBytes(owner.key, a.download_url);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), a.sha256);
    assert.equal(bytes.length, a.size_bytes);
  }
  const csv = (await fileBytes(owner.key, done.artifacts[0].download_url)).toString();
  assert.equal(csv.split('\n')[0], 'arm,output,n,mean,stddev,min,max,ci95_low,ci95_high');
  assert.equal(csv.trim().split('\n').length, 1 + 3 * 2);
  const svg = (await fileBytes(owner.key, done.artifacts[1].download_url)).toString();
  assert.match(svg, /^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.match(svg, /final_size/);
  // Listed most recently changed first, with run totals, and filtered by workspace.
  const list = (await call('GET', `/experiments?workspace_id=${ws.workspace_id}&status=completed`, { key: owner.key })).body;
  assert.ok(list.items.some((e: any) => e.id === study.id && e.run_totals.completed === 9));
});

test('an arm that always fails reports no metrics; the other arm is compared, with a descriptive Welch test', { timeout: 240_000 }, async () => {
  const { study } = await openStudy(owner.key, {
    name: 'One broken arm', arms: [arm('ok', { replicates: 2, seed: 1 }), arm('broken', { replicates: 2, seed: 1, inputs: { fail: true } })],
  });
  const done = await waitForStudy(owner.key, study.id);
  assert.equal(done.status, 'completed');
  assert.equal(done.run_totals.completed, 2);
  assert.equal(done.run_totals.failed, 2);
  const [ok, broken] = done.comparison.arms;
  assert.equal(broken.metrics, null);
  assert.equal(broken.completed_runs, 0);
  assertClose(ok.metrics, await expectedMetrics(owner.key, done.arms[0].runs.map((r: any) => r.run_id)), 'arm ok');
  assert.equal(done.comparison.tests.length, 2);
  for (const t of done.comparison.tests) {
    assert.equal(t.p_value, null);
    assert.equal(t.descriptive, true);
  }
});

test('two arms get a Welch p-value per output, labelled descriptive; fixed-seed replicates give byte-identical artifacts', { timeout: 240_000 }, async () => {
  const { study } = await openStudy(owner.key, {
    name: 'Two arms', arms: [arm('a', { replicates: 3, seed: 5, fixed_seed: true, inputs: { growth_rate: 0.1 } }), arm('b', { replicates: 3, seed: 100, inputs: { growth_rate: 0.3 } })],
  });
  const done = await waitForStudy(owner.key, study.id);
  assert.deepEqual(done.arms[0].runs.map((r: any) => r.seed), [5, 5, 5]);
  const tests = done.comparison.tests;
  assert.deepEqual(tests.map((t: any) => t.output), ['final_size', 'mean_growth']);
  // Arm a's three runs share one seed: no spread, but arm b has some, so Welch is defined.
  for (const t of tests) {
    assert.equal(t.method, 'welch_t_test');
    assert.ok(t.p_value >= 0 && t.p_value <= 1, JSON.stringify(t));
  }
  const hashes = [];
  for (const r of done.arms[0].runs) {
    const results = (await call('GET', `/runs/${r.run_id}/results`, { key: owner.key })).body;
    hashes.push(results.artifacts.map((a: any) => `${a.file_name}:${a.sha256}`).sort());
  }
  assert.ok(hashes[0].length >= 2);
  assert.deepEqual(hashes[1], hashes[0]);
  assert.deepEqual(hashes[2], hashes[0]);
  const csv = (await fileBytes(owner.key, done.artifacts[0].download_url)).toString();
  assert.equal(csv.split('\n')[0], 'arm,output,n,mean,stddev,min,max,ci95_low,ci95_high,welch_p_value');
});

test('every arm field is in the digest; a changed digest is 409; a study beyond the balance is 402 and creates no run', { timeout: 60_000 }, async () => {
  const base = { name: 'Digest', goal: 'g', arms: [arm('x', { inputs: { growth_rate: 0.1 }, replicates: 2, seed: 7 })] };
  const first = await prepare(owner.key, base);
  const variants: Array<Record<string, unknown>> = [
    { label: 'y' }, { inputs: { growth_rate: 0.2 } }, { replicates: 3 }, { seed: 8 }, { fixed_seed: true }, { max_runtime_seconds: 59 },
    { compute_profile_id: 'cpu-small' }, await otherWorkspace(), { revision_id: await nextRevision(ws.workspace_id, ws.revision_id) },
  ];
  const digests = new Set([first.plan_sha256]);
  for (const v of variants) {
    const p = await prepare(owner.key, { ...base, arms: [{ ...base.arms[0], ...v }] });
    digests.add(p.plan_sha256);
  }
  digests.add((await prepare(owner.key, { ...base, name: 'Digest 2' })).plan_sha256);
  assert.equal(digests.size, variants.length + 2, 'every change makes a new digest');
  const wrong = await call('POST', '/experiments', { key: owner.key, body: { plan_id: first.plan_id, plan_sha256: first.plan_sha256.replace(/^./, (c: string) => (c === 'a' ? 'b' : 'a')) } });
  assert.equal(wrong.status, 409);
  assert.equal(errorOf(wrong).code, 'plan_digest_mismatch');

  const poor = await newAccount({ usd: 0.001 });
  const poorWs = await workspaceOfLab(poor.key, 'Poor', LAB);
  const big = await call('POST', '/experiment-plans', { key: poor.key, body: { name: 'Too big', arms: [{ label: 'a', workspace_id: poorWs.workspace_id, revision_id: poorWs.revision_id, compute_profile_id: PROFILE.id, max_runtime_seconds: 60, replicates: 2 }] } });
  assert.equal(big.status, 200, big.text);
  const short = await call('POST', '/experiments', { key: poor.key, body: { plan_id: big.body.plan_id, plan_sha256: big.body.plan_sha256 } });
  assert.equal(short.status, 402, short.text);
  assert.equal(errorOf(short).code, 'insufficient_credits');
  assert.equal(Number((await testDb()('runs').where({ account_id: poor.account.id }).count({ n: '*' }))[0]!.n), 0);
  assert.equal(Number((await testDb()('experiments').where({ account_id: poor.account.id }).count({ n: '*' }))[0]!.n), 0);
  const balance = await testDb()('compute_balances').where({ account_id: poor.account.id }).first();
  assert.equal(Number(balance.reserved_micros), 0);
  assert.equal(Number(balance.available_micros), 1000);
});

test('bad arms answer with the arm in param; another account\'s study is 404 like a missing one', { timeout: 60_000 }, async () => {
  const dup = await call('POST', '/experiment-plans', { key: owner.key, body: { name: 'Dup', arms: [arm('same'), arm('same')] } });
  assert.equal(dup.status, 422);
  assert.equal(errorOf(dup).param, 'arms[1].label');
  const unknownInput = await call('POST', '/experiment-plans', { key: owner.key, body: { name: 'Unknown', arms: [arm('a'), arm('b', { inputs: { nope: 1 } })] } });
  assert.equal(unknownInput.status, 422);
  assert.equal(errorOf(unknownInput).code, 'unknown_inputs');
  assert.equal(errorOf(unknownInput).param, 'arms[1].inputs');
  const stranger = await newAccount({ usd: 1 });
  const foreignWs = await call('POST', '/experiment-plans', { key: stranger.key, body: { name: 'Foreign', arms: [{ label: 'a', workspace_id: ws.workspace_id, revision_id: ws.revision_id }] } });
  assert.equal(foreignWs.status, 404);
  assert.equal(errorOf(foreignWs).param, 'arms[0].workspace_id');
  const outOfRange = await call('POST', '/experiment-plans', { key: owner.key, body: { name: 'Seeds', arms: [arm('a', { seed: 2147483646, replicates: 2 })] } });
  assert.equal(outOfRange.status, 422);
  assert.equal(errorOf(outOfRange).param, 'arms[0].seed');

  const { study } = await openStudy(owner.key, { name: 'Private', arms: [arm('a', { seed: 3 })] });
  const missing = await call('GET', '/experiments/exp_00000000000000000000000000', { key: stranger.key });
  const foreign = await call('GET', `/experiments/${study.id}`, { key: stranger.key });
  assert.equal(foreign.status, 404);
  assert.deepEqual({ ...errorOf(foreign), request_id: null }, { ...errorOf(missing), request_id: null });
  const patch = await call('PATCH', `/experiments/${study.id}`, { key: stranger.key, body: { name: 'mine now' } });
  assert.equal(patch.status, 404);
  assert.equal(errorOf(patch).code, 'experiment_not_found');
  const theirs = (await call('GET', '/experiments', { key: stranger.key })).body;
  assert.equal(theirs.items.length, 0);
  await waitForStudy(owner.key, study.id);
});

test('PATCH renames, detaches (the comparison follows) and closes: queued runs are cancelled, running ones only when asked', { timeout: 240_000 }, async () => {
  const { study } = await openStudy(owner.key, { name: 'Patchable', arms: [arm('a', { replicates: 3, seed: 40 })] });
  const done = await waitForStudy(owner.key, study.id);
  const [first] = done.arms[0].runs;
  const renamed = await call('PATCH', `/experiments/${study.id}?include_runs=true`, { key: owner.key, body: { name: 'Renamed', goal: 'new goal', detach_run_ids: [first.run_id] } });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.name, 'Renamed');
  assert.equal(renamed.body.goal, 'new goal');
  assert.equal(renamed.body.arms[0].runs.length, 2);
  assert.equal(renamed.body.detached_runs[0].run_id, first.run_id);
  assert.equal(renamed.body.comparison.arms[0].completed_runs, 2);
  assert.notEqual(renamed.body.artifacts[0].sha256, done.artifacts[0].sha256, 'the stored comparison follows the detach');
  assert.equal((await call('GET', `/runs/${first.run_id}`, { key: owner.key })).body.experiment_id, null);
  const again = await call('PATCH', `/experiments/${study.id}?include_runs=true`, { key: owner.key, body: { detach_run_ids: [first.run_id] } });
  assert.equal(again.status, 200, 'detaching again changes nothing');
  assert.equal(again.body.detached_runs.length, 1);
  const stranger = await call('PATCH', `/experiments/${study.id}`, { key: owner.key, body: { name: 'not applied', detach_run_ids: [crypto.randomUUID()] } });
  assert.equal(stranger.status, 422);
  assert.equal(errorOf(stranger).code, 'run_not_in_experiment');
  assert.equal((await call('GET', `/experiments/${study.id}`, { key: owner.key })).body.name, 'Renamed', 'a refused PATCH changes nothing');

  // A study bigger than the concurrency limit, closed at once: what had not begun is
  // cancelled with nothing charged; what was running finishes.
  const { study: big } = await openStudy(owner.key, { name: 'Closed early', arms: [arm('a', { replicates: 10, seed: 1 })] });
  const closed = await call('PATCH', `/experiments/${big.id}`, { key: owner.key, body: { status: 'closed' } });
  assert.equal(closed.status, 200, closed.text);
  assert.equal(closed.body.status, 'closed');
  assert.ok(closed.body.run_totals.cancelled >= 5, JSON.stringify(closed.body.run_totals));
  const end = await waitForStudy(owner.key, big.id);
  assert.equal(end.status, 'closed');
  assert.equal(end.run_totals.total, 10);
  assert.equal(end.run_totals.cancelled + end.run_totals.completed, 10);
  for (const r of end.arms[0].runs.filter((x: any) => x.status === 'cancelled')) assert.equal(r.credits_settled, 0);
  const bad = await call('PATCH', `/experiments/${big.id}`, { key: owner.key, body: { cancel_running: true } });
  assert.equal(bad.status, 422);
  assert.equal(errorOf(bad).param, 'cancel_running');
});

test('a 50-run study never exceeds the concurrency limit and survives kill -9 of its worker: 50 terminal runs, one reservation and one settlement each', { timeout: 600_000 }, async () => {
  const { study } = await openStudy(owner.key, { name: 'Fifty', arms: Array.from({ length: 5 }, (_, i) => arm(`arm-${i}`, { replicates: 10, seed: i * 100 })) });
  assert.equal(study.run_totals.total, 50);
  // Kill the worker executing the labs while runs are in flight; another takes over.
  await until(120_000, async () => ((await call('GET', `/experiments/${study.id}`, { key: owner.key })).body.run_totals.completed >= 8 ? true : undefined));
  worker!.proc.kill('SIGKILL');
  await new Promise((r) => worker!.proc.once('exit', r));
  worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
  const done = await waitForStudy(owner.key, study.id, 540_000);
  assert.equal(done.run_totals.total, 50);
  assert.equal(done.run_totals.completed, 50, JSON.stringify(done.run_totals));
  const ids: string[] = done.arms.flatMap((a: any) => a.runs.map((r: any) => r.run_id));
  assert.equal(new Set(ids).size, 50);
  const db = testDb();
  const txns: Array<{ kind: string; ref: string }> = await db('ledger_txns').whereIn('ref', ids.map((id) => `run:${id}`)).select('kind', 'ref');
  for (const id of ids) {
    assert.equal(txns.filter((t) => t.ref === `run:${id}` && t.kind === 'reserve').length, 1, `one reservation of ${id}`);
    assert.equal(txns.filter((t) => t.ref === `run:${id}` && t.kind === 'settle').length, 1, `one settlement of ${id}`);
  }
  // At no moment were more runs running than the limit: the state changes of every run,
  // replayed in commit order, never hold more than 4 at once.
  const events: Array<{ run_id: string; at: Date; status: string }> = await db('run_events').whereIn('run_id', ids).where({ type: 'state_changed' })
    .select('run_id', 'at', db.raw(`data->>'status' AS status`));
  const changes = events.filter((e) => e.status !== 'queued').map((e) => ({ at: new Date(e.at).getTime(), d: e.status === 'running' ? 1 : -1 }))
    .sort((x, y) => x.at - y.at || x.d - y.d);
  let running = 0;
  let most = 0;
  for (const c of changes) {
    running += c.d;
    most = Math.max(most, running);
  }
  assert.ok(most <= 4, `at most 4 runs at once, saw ${most}`);
  assert.ok(most >= 2, `runs did run side by side (saw ${most})`);
});


import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Silico, StudyNotStarted, StudyTimeout, type RunTotals } from '../../sdk/src/index.ts';
import { studyFromYaml } from '../../sdk/src/cli/studyFile.ts';
import { UsageError } from '../../sdk/src/cli/output.ts';

// The experiments resource and StudyHandle against a scripted fetch, and the CLI's study
// file (arms and sweeps), without a server.

interface Sent { method: string; path: string; body: any; headers: Record<string, string> }
type Route = (method: string, url: URL, body: any) => unknown;

function client(route: Route) {
  const sent: Sent[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    sent.push({ method: init?.method ?? 'GET', path: url.pathname + url.search, body, headers: (init?.headers ?? {}) as Record<string, string> });
    const answer = route(init?.method ?? 'GET', url, body);
    if (answer === undefined) {
      return new Response(JSON.stringify({ error: { type: 'not_found_error', code: 'route_not_found', message: 'no', param: null, details: {}, request_id: 'x' } }), { status: 404 });
    }
    return new Response(JSON.stringify(answer), { headers: { 'Content-Type': 'application/json' } });
  };
  const c = new Silico({ apiKey: 'k', baseUrl: 'http://api.test/v1', fetch: fetch as typeof globalThis.fetch, retry: { initialDelayMs: 1, minDelayMs: 1 } });
  return { c, sent };
}

const totals = (t: Partial<RunTotals>): RunTotals => {
  const all = { queued: 0, running: 0, cancelling: 0, completed: 0, failed: 0, cancelled: 0, timed_out: 0, ...t };
  return { ...all, total: Object.values(all).reduce((a, b) => a + b, 0) };
};
const study = (t: Partial<RunTotals>, extra: Record<string, unknown> = {}) => ({
  object: 'experiment', id: 'exp_1', experiment_id: 'exp_1', name: 'S', status: 'running', run_totals: totals(t), completed_at: null,
  comparison: { descriptive: true, note: 'n', confidence_level: 0.95, outputs: [], arms: [], tests: [] }, arms: [], artifacts: [], ...extra,
});
const plan = (status: 'ready' | 'blocked' = 'ready') => ({
  object: 'experiment_plan', plan_id: 'p1', plan_sha256: 'a'.repeat(64), status, run_count: 4, estimated_max_usd: 0.0024, arms: [],
  findings: status === 'blocked' ? [{ severity: 'blocking', code: 'revision_not_found', message: 'no', path: 'arms[1].revision_id' }] : [],
});
const body = { name: 'S', arms: [{ label: 'a', workspace_id: 'w', revision_id: 'r', replicates: 2 }, { label: 'b', workspace_id: 'w', revision_id: 'r', replicates: 2 }] };

test('run() prepares, shows confirm the plan with its whole-study price, then opens exactly that plan and returns its handle', async () => {
  const { c, sent } = client((m, u) => {
    if (m === 'POST' && u.pathname === '/v1/experiment-plans') return plan();
    if (m === 'POST' && u.pathname === '/v1/experiments') return study({ queued: 4 });
    return undefined;
  });
  const seen: Array<{ usd: number; runs: number }> = [];
  const handle = await c.experiments.run(body, { idempotencyKey: 'key-1', confirm: (p) => { seen.push({ usd: p.estimated_max_usd, runs: p.run_count }); return true; } });
  assert.deepEqual(seen, [{ usd: 0.0024, runs: 4 }]);
  assert.equal(handle.id, 'exp_1');
  assert.equal(handle.lastSeen?.run_totals.queued, 4);
  assert.deepEqual(sent.map((s) => `${s.method} ${s.path}`), ['POST /v1/experiment-plans', 'POST /v1/experiments']);
  assert.deepEqual(sent[0]!.body, body);
  assert.deepEqual(sent[1]!.body, { plan_id: 'p1', plan_sha256: 'a'.repeat(64) });
  assert.equal(sent[1]!.headers['Idempotency-Key'], 'key-1');
});

test('run() opens nothing when the confirmation declines or the plan is blocked (StudyNotStarted with the plan)', async () => {
  for (const [status, confirm, reason] of [['ready', false, 'declined'], ['blocked', true, 'blocked']] as const) {
    let asked = 0;
    const { c, sent } = client((m, u) => (u.pathname === '/v1/experiment-plans' ? plan(status) : study({ queued: 4 })));
    await assert.rejects(c.experiments.run(body, { confirm: async () => { asked++; return confirm; } }), (e: unknown) => {
      assert.ok(e instanceof StudyNotStarted);
      assert.equal(e.reason, reason);
      assert.equal(e.plan.plan_id, 'p1');
      if (reason === 'blocked') assert.match(e.message, /revision_not_found/);
      return true;
    });
    assert.equal(asked, status === 'blocked' ? 0 : 1, 'a blocked plan is never offered for confirmation');
    assert.ok(!sent.some((s) => s.path === '/v1/experiments'), 'POST /experiments was not sent');
  }
});

test('wait() reports the run totals only when they change and resolves once every run has ended', async () => {
  const reads = [study({ queued: 4 }), study({ queued: 4 }), study({ queued: 2, running: 2 }), study({ running: 1, completed: 2, failed: 1 }),
    study({ completed: 3, failed: 1 }), study({ completed: 3, failed: 1 }, { status: 'completed', completed_at: '2026-11-24T00:00:00Z' })];
  const { c, sent } = client((m, u) => (m === 'GET' && u.pathname === '/v1/experiments/exp_1' ? reads.shift() : undefined));
  const progress: RunTotals[] = [];
  const done = await c.experiments.handle('exp_1').wait({ pollMs: 1, onProgress: (t) => progress.push(t) });
  assert.equal(done.status, 'completed');
  assert.equal(sent.length, 6, 'read until completed_at was set');
  assert.deepEqual(progress.map((t) => [t.queued, t.running, t.completed, t.failed]), [[4, 0, 0, 0], [2, 2, 0, 0], [0, 1, 2, 1], [0, 0, 3, 1]]);
});

test('a closed study whose runs have all ended is finished too; completed_at decides, not the status', async () => {
  const { c } = client(() => study({ completed: 1, cancelled: 3 }, { status: 'closed', completed_at: '2026-11-24T00:00:00Z' }));
  const done = await c.experiments.wait('exp_1', { timeoutMs: 0 });
  assert.equal(done.status, 'closed');
});

test('a wait that runs out throws StudyTimeout carrying the handle and the last study; the handle waits again later', async () => {
  let finished = false;
  const { c } = client(() => (finished ? study({ completed: 2 }, { status: 'completed', completed_at: 'x' }) : study({ running: 2 })));
  const handle = c.experiments.handle('exp_1');
  const err = await handle.wait({ timeoutMs: 20, pollMs: 5 }).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof StudyTimeout);
  assert.equal(err.handle, handle);
  assert.equal(err.experiment?.run_totals.running, 2);
  assert.match(err.message, /still running \(0 of 2 runs ended\) after 20 ms/);
  finished = true;
  assert.equal((await err.handle.wait({ pollMs: 1 })).status, 'completed');
});

test('close(), detach() and comparison() send the PATCH bodies of the API and read the study', async () => {
  const { c, sent } = client((m) => study({ completed: 2 }, m === 'PATCH' ? { status: 'closed' } : {}));
  const h = c.experiments.handle('exp_1');
  await h.close();
  await h.close({ cancelRunning: true });
  await h.detach(['r1', 'r2']);
  assert.equal(h.lastSeen?.status, 'closed');
  assert.deepEqual((await h.comparison()).confidence_level, 0.95);
  assert.deepEqual(sent.map((s) => [s.method, s.path, s.body]), [
    ['PATCH', '/v1/experiments/exp_1', { status: 'closed' }],
    ['PATCH', '/v1/experiments/exp_1', { status: 'closed', cancel_running: true }],
    ['PATCH', '/v1/experiments/exp_1', { detach_run_ids: ['r1', 'r2'] }],
    ['GET', '/v1/experiments/exp_1', undefined],
  ]);
});

test('list() pages by cursor with the filters in the query', async () => {
  const { c, sent } = client((_m, u) => (u.searchParams.get('cursor') ? { items: [{ id: 'exp_2' }], has_more: false, next_cursor: null } : { items: [{ id: 'exp_1' }], has_more: true, next_cursor: 'c2' }));
  const ids: string[] = [];
  for await (const e of c.experiments.list({ status: 'completed', limit: 1 })) ids.push(e.id);
  assert.deepEqual(ids, ['exp_1', 'exp_2']);
  assert.deepEqual(sent.map((s) => s.path), ['/v1/experiments?status=completed&limit=1', '/v1/experiments?status=completed&limit=1&cursor=c2']);
});

test('a sweep expands into the grid of arms, labelled by their values, over the shared defaults and inputs', () => {
  const study = studyFromYaml(`
name: Rate sweep
goal: Does the rate move the final size?
workspace_id: w1
revision_id: r1
compute_profile_id: cpu-small
replicates: 3
seed: 7
inputs: {noise: 0.05, fail: false}
sweep:
  growth_rate: [0.05, 0.1, 0.2]
  noise: [0.01, 0.1]
`);
  assert.equal(study.name, 'Rate sweep');
  assert.equal(study.goal, 'Does the rate move the final size?');
  assert.deepEqual(study.arms!.map((a) => a.label), [
    'growth_rate=0.05,noise=0.01', 'growth_rate=0.05,noise=0.1', 'growth_rate=0.1,noise=0.01',
    'growth_rate=0.1,noise=0.1', 'growth_rate=0.2,noise=0.01', 'growth_rate=0.2,noise=0.1',
  ]);
  assert.deepEqual(study.arms![3], {
    label: 'growth_rate=0.1,noise=0.1', workspace_id: 'w1', revision_id: 'r1', compute_profile_id: 'cpu-small', replicates: 3, seed: 7,
    inputs: { noise: 0.1, fail: false, growth_rate: 0.1 },
  });
});

test('listed arms take the top-level defaults; their own fields win and inputs merge', () => {
  const study = studyFromYaml(`
name: Two arms
workspace_id: w1
revision_id: r1
replicates: 2
inputs: {noise: 0.05}
arms:
  - label: slow
    inputs: {growth_rate: 0.05}
  - label: other
    revision_id: r2
    replicates: 5
    fixed_seed: true
    seed: 3
`);
  assert.deepEqual(study.arms, [
    { label: 'slow', workspace_id: 'w1', revision_id: 'r1', replicates: 2, inputs: { noise: 0.05, growth_rate: 0.05 } },
    { label: 'other', workspace_id: 'w1', revision_id: 'r2', replicates: 5, fixed_seed: true, seed: 3, inputs: { noise: 0.05 } },
  ]);
  assert.equal('goal' in study, false);
});

test('a sensitivity or calibration block makes a study of one lab: the top-level lab keys become its lab', () => {
  const study = studyFromYaml(`
name: SIR sensitivity
goal: Which rate matters?
workspace_id: w1
revision_id: r1
compute_profile_id: cpu-small
inputs: {population: 10000}
sensitivity:
  method: sobol
  base_sample: 64
  parameters:
    - {input: beta, low: 0.2, high: 0.6}
  outputs:
    - {output: recovered, summary: final}
`);
  assert.deepEqual(study, {
    name: 'SIR sensitivity', goal: 'Which rate matters?',
    lab: { workspace_id: 'w1', revision_id: 'r1', compute_profile_id: 'cpu-small', inputs: { population: 10000 } },
    sensitivity: { method: 'sobol', base_sample: 64, parameters: [{ input: 'beta', low: 0.2, high: 0.6 }], outputs: [{ output: 'recovered', summary: 'final' }] },
  });
  const calibration = studyFromYaml('name: Fit\nworkspace_id: w1\nrevision_id: r1\ncalibration: {dataset_id: ds_1, budget: 60, batch_size: 6}\n');
  assert.deepEqual(calibration, { name: 'Fit', lab: { workspace_id: 'w1', revision_id: 'r1' }, calibration: { dataset_id: 'ds_1', budget: 60, batch_size: 6 } });
});

test('a study file that cannot describe a study is a usage error naming what is wrong', () => {
  const cases: Array<[string, RegExp]> = [
    ['name: x\nworkspace_id: w\n', /exactly one of arms .*, sweep .*, sensitivity, calibration or petab_calibration/],
    ['name: x\npetab_calibration: {import_id: petab_x, starts: 4}\ncompute_profile_id: cpu-small\n', /compute_profile_id cannot stand beside petab_calibration/],
    ['name: x\npetab_calibration: [1]\n', /petab_calibration must be a mapping/],
    ['name: x\nsensitivity: {method: sobol}\ncalibration: {budget: 2}\n', /exactly one of arms/],
    ['name: x\nsensitivity: [1]\n', /sensitivity must be a mapping/],
    ['name: x\nreplicates: 3\nsensitivity: {method: sobol}\n', /replicates belong to arms/],
    ['name: x\narms: [{label: a}]\nsweep: {g: [1]}\n', /exactly one of arms/],
    ['arms: [{label: a}]\n', /needs a name/],
    ['name: x\nreplicate: 3\narms: [{label: a}]\n', /unknown key\(s\) replicate/],
    ['name: x\nsweep: {growth_rate: 0.1}\n', /sweep.growth_rate must be a non-empty list/],
    ['name: x\nsweep: {growth_rate: []}\n', /non-empty list/],
    ['name: x\narms: []\n', /arms must be a non-empty list/],
    ['name: x\narms: [3]\n', /arms\[0\] must be a mapping/],
    ['name: [x\n', /not valid YAML/],
    ['- a\n', /must be a YAML mapping/],
  ];
  for (const [text, message] of cases) assert.throws(() => studyFromYaml(text), (e: unknown) => e instanceof UsageError && message.test(e.message), text);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { call, closeTestDb, downloadArtifact, errorOf, fileBytes, newAccount, until } from '../helpers.ts';
import { BENCHMARK, importProblem, petabSkip, pypesto } from '../petabProblems.ts';
import { mcpClients } from '../mcpClients.ts';

// A PEtab benchmark problem (test/fixtures/petab/SOURCES.md) calibrated through the
// service: imported, its starts spread over engine runs, profiled from the best end point,
// and checked against pyPESTO run in-process on the same problem from the same starts.

after(closeTestDb);
const skip = petabSkip;
const BOEHM = 'Boehm_JProteomeRes2014';
const clients = mcpClients();
// pyPESTO's profile steps made coarser than its defaults, the same on both sides: a profile
// at the defaults costs about a minute of a core on Boehm (bench:petab profiles at them).
const PROFILE = { parameters: ['k_phos'], options: { default_step_size_absolute: 0.1, min_step_size_absolute: 0.05, max_step_size_absolute: 0.5 } };

let owner: Awaited<ReturnType<typeof newAccount>>;
let imported: Record<string, any>;
before(async () => {
  if (skip) return;
  owner = await newAccount({ usd: 100 });
  imported = await importProblem(owner.key, BOEHM);
});

async function waitForStudy(key: string, id: string, ms = 400_000): Promise<any> {
  return until(ms, async () => {
    const e = (await call('GET', `/experiments/${id}`, { key })).body;
    return e.completed_at ? e : undefined;
  });
}

// Seed 2's four starts: the fourth reaches the optimum (seed 1 needs fifteen).
test('Boehm calibrated from seeded random starts: the best NLL ≤ 138.23, the waterfall of every start, k_phos profiled identifiable with the Gauss-Newton view beside it, each observable\'s fit with its noise band, every evaluation recorded; pyPESTO in-process from the same starts agrees', { skip, timeout: 600_000 }, async () => {
  const baseline = pypesto(path.join(BENCHMARK, BOEHM, `${BOEHM}.yaml`), 2, 4, PROFILE);
  const plan = await call('POST', '/experiment-plans', {
    key: owner.key, body: { name: 'Boehm calibration', petab_calibration: { import_id: imported.import_id, starts: 4, seed: 2, profile: PROFILE } },
  });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  assert.equal(plan.body.kind, 'petab_calibration');
  const d = plan.body.design;
  assert.deepEqual(d.parameters.map((p: any) => p.id), imported.design.estimated, 'the estimated parameters, in vector order');
  const { starts } = await baseline.starts;
  assert.deepEqual(d.parameters.map((p: any) => p.id), (await baseline.starts).parameters);
  assert.equal(plan.body.run_count, d.run_count);
  const opened = await call('POST', '/experiments', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(opened.status, 200, opened.text);
  const done = await waitForStudy(owner.key, opened.body.id);
  const a = done.analysis;
  assert.equal(a.kind, 'petab_calibration');
  assert.equal(a.stopped, 'completed');
  assert.equal(a.starts_told, 4);
  assert.ok(a.best.nll <= 138.23, `best NLL ${a.best.nll}`);
  assert.deepEqual(a.waterfall.map((w: any) => w.start).sort(), [0, 1, 2, 3]);
  assert.deepEqual(a.waterfall.map((w: any) => w.nll), [...a.waterfall.map((w: any) => w.nll)].sort((x: number, y: number) => x - y), 'best first');
  assert.equal(a.within_best.starts, a.waterfall.filter((w: any) => w.nll - a.best.nll <= 0.1).length);
  assert.equal(a.within_best.fraction, a.within_best.starts / 4);
  // A waterfall without a plateau says the best may not be the optimum; k_phos's profile stays above the best.
  assert.deepEqual(a.warnings, a.within_best.starts < 2 ? [`Only 1 of 4 starts ended within 0.1 of the best NLL: the waterfall has no plateau, so the best may not be the optimum; more starts would tell.`] : []);

  // The starts the service drew are pyPESTO's user's draw from the same seed.
  const ours = await testStarts(done);
  ours.forEach((x0, i) => x0.forEach((v, j) => assert.ok(Math.abs(v - starts[i]![j]!) < 1e-12, `start ${i}, parameter ${j}`)));
  const theirs = await baseline.ends;
  const theirBest = Math.min(...theirs.ends.map((e) => e.fval));
  assert.ok(Math.abs(a.best.nll - theirBest) <= 1e-3, `service ${a.best.nll}, pyPESTO ${theirBest}`);

  // k_phos: identifiable, its interval pyPESTO's within 0.05 on its (log10) scale, and the
  // Gauss-Newton interval beside it, labelled; k_exp_hetero sits at its lower bound.
  const kPhos = a.parameters.find((p: any) => p.id === 'k_phos');
  assert.equal(kPhos.scale, 'log10');
  assert.equal(kPhos.profile.identifiability, 'identifiable');
  const { profiles } = await baseline.profiles;
  for (const side of ['low', 'high'] as const) {
    assert.ok(Math.abs(kPhos.profile[side] - profiles[0]![side]) <= 0.05, `k_phos ${side}: service ${kPhos.profile[side]}, pyPESTO ${profiles[0]![side]}`);
  }
  assert.equal(kPhos.gauss_newton.status, 'interval');
  assert.ok(kPhos.gauss_newton.low < kPhos.best && kPhos.best < kPhos.gauss_newton.high);
  assert.equal(kPhos.agreement, 'agree');
  assert.equal(a.gauss_newton.method, 'gauss_newton');
  assert.equal(a.parameters.find((p: any) => p.id === 'k_exp_hetero').gauss_newton.status, 'at_bound');
  assert.deepEqual(a.profiles.map((p: any) => p.parameter), ['k_phos']);
  assert.ok(a.parameters.filter((p: any) => p.id !== 'k_phos').every((p: any) => p.profile === null && p.agreement === null), 'only k_phos was profiled');

  // Each observable's simulation at the best point against its data, with the band of one noise scale.
  assert.deepEqual(a.fits.map((f: any) => f.observable).sort(), ['pSTAT5A_rel', 'pSTAT5B_rel', 'rSTAT5A_rel']);
  for (const f of a.fits) {
    assert.equal(f.points.length, 16);
    for (const p of f.points) {
      assert.ok(p.sigma > 0 && p.low < p.simulation && p.simulation < p.high, JSON.stringify(p));
      assert.ok(Math.abs(p.high - p.low - 2 * p.sigma) < 1e-9, 'lin: one σ each side');
    }
  }

  // Every evaluation of every start is a CSV on the run that made it, numbered in order, its best the start's end.
  for (const w of a.waterfall) {
    const artifacts = (await call('GET', `/runs/${w.run_id}/results`, { key: owner.key })).body.artifacts as any[];
    const file = artifacts.find((f) => f.file_name === `evaluations-start-${w.start}.csv`);
    assert.ok(file, `start ${w.start}'s evaluations`);
    assert.equal(file.sha256, w.evaluations_sha256);
    const rows = parseCsv(await downloadArtifact(owner.key, w.run_id, file.artifact_id), { columns: true }) as Array<Record<string, string>>;
    assert.equal(rows.length, w.evaluations);
    assert.deepEqual(rows.map((r) => Number(r.evaluation)), rows.map((_, i) => i + 1));
    assert.equal(Math.min(...rows.map((r) => Number(r.nll))), w.nll);
    assert.match(rows[0]!.simulation_sha256!, /^[0-9a-f]{64}$/);
    assert.deepEqual(Object.keys(rows[0]!).slice(4), imported.design.estimated);
  }
  // Each run of the study names its engine's process (forked from a warm instance of the
  // engine when the worker had one within its bounds).
  for (const r of (await call('GET', `/experiments/${done.id}/runs?limit=100`, { key: owner.key })).body.items as any[]) {
    const events = (await call('GET', `/runs/${r.run_id}/events?limit=1000`, { key: owner.key })).body.items as Array<{ message: string; data: Record<string, unknown> }>;
    const started = events.find((e) => e.message.startsWith('Engine process started'));
    assert.ok(started && Number(started.data.pid) > 0, `run ${r.run_id}: its engine's process`);
    assert.equal(started.message.includes('forked from warm instance'), started.data.warm_instance !== undefined);
  }
  assert.ok(done.artifacts.some((f: any) => f.file_name === 'analysis.svg'));

  // The passport: the problem's files with their digests, as the lab the study ran holds them, the libraries and the seed.
  const passport = await call('GET', `/passports?experiment_id=${done.id}`, { key: owner.key });
  assert.equal(passport.status, 200, passport.text);
  const links = Object.fromEntries(passport.body.checks.find((c: any) => c.check === 'provenance_chain').evidence.links.map((l: any) => [l.link, l]));
  assert.equal(links.petab_problem.verified, true);
  assert.equal(links.petab_problem.seed, 2);
  assert.deepEqual(links.petab_problem.files.map((f: any) => f.sha256).sort(), imported.problem.files.map((f: any) => f.sha256).sort());
  assert.equal(links.analysis_libraries.versions.petab, '0.10.0');
  assert.equal(links.analysis_libraries.environment, 'activities/petab/toolkit.lock');

  // An agent's read leaves out the per-point lists (analysis.json has them whole); the answer is the rest, as REST's.
  const client = await clients.http(owner.key);
  const got = (await client.callTool({ name: 'experiment_get', arguments: { experiment_id: done.id } })).structuredContent as Record<string, any>;
  assert.equal(got.analysis.waterfall, undefined);
  assert.ok(got.analysis.fits.length === 3 && got.analysis.fits.every((f: any) => f.points === undefined));
  assert.ok(got.analysis.profiles.every((p: any) => p.points === undefined));
  assert.deepEqual([got.analysis.best, got.analysis.parameters, got.analysis.within_best], [a.best, a.parameters, a.within_best]);
  const whole = done.artifacts.find((f: any) => f.file_name === 'analysis.json');
  const file = JSON.parse((await fileBytes(owner.key, whole.download_url)).toString('utf8'));
  assert.deepEqual(file.waterfall, a.waterfall);

  // The export: a PEtab problem nominal at the best point, one of the account's files; imported, its NLL at nominal is the best.
  const exported = done.artifacts.find((f: any) => f.file_name === 'petab-export.zip');
  assert.equal(exported.format, 'zip');
  const again = await call('POST', '/petab-import-plans', { key: owner.key, body: { title: 'Boehm, calibrated', archive_file_id: exported.file_id } });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.body.status, 'ready', JSON.stringify(again.body.findings));
  assert.ok(Math.abs(again.body.nominal.nll - a.best.nll) <= 1e-6 * a.best.nll, `re-imported NLL at nominal ${again.body.nominal.nll}, best ${a.best.nll}`);
  const table = new Map<string, any>(again.body.design.parameters.map((p: any) => [p.id, p]));
  for (const p of a.parameters) assert.ok(Math.abs(Math.log10(table.get(p.id).nominal_value) - p.best) < 1e-9, `${p.id}: nominal at its best`);
  assert.deepEqual(again.body.problem.files.filter((f: any) => !f.path.startsWith('parameters')).map((f: any) => f.sha256).sort(),
    imported.problem.files.filter((f: any) => !f.path.startsWith('parameters')).map((f: any) => f.sha256).sort(), 'every other file as imported');
});

/** The starts the study gave its runs, in start order. */
async function testStarts(e: any): Promise<number[][]> {
  const runs = (await call('GET', `/experiments/${e.id}/runs?limit=100`, { key: owner.key })).body.items as any[];
  assert.ok(runs.length > 0);
  const { testDb } = await import('../helpers.ts');
  const points: Array<{ attrs: any }> = await testDb()('experiment_points').where({ experiment_id: e.id, batch: 0 }).orderBy('idx').select('attrs');
  return points.flatMap((p) => p.attrs.starts).sort((x: any, y: any) => x.index - y.index).map((s: any) => s.x0);
}

test('a PEtab calibration\'s plan: another account\'s import answers as a missing one; an unknown or repeated profiled parameter, a lab beside it and a second kind are named', { skip }, async () => {
  const other = await newAccount();
  const plan = (key: string, body: Record<string, unknown>) => call('POST', '/experiment-plans', { key, body: { name: 'x', ...body } });
  const missing = errorOf(await plan(other.key, { petab_calibration: { import_id: imported.import_id, starts: 2 } }));
  assert.deepEqual([missing.code, missing.param], ['petab_import_not_found', 'petab_calibration.import_id']);
  const unknown = errorOf(await plan(owner.key, { petab_calibration: { import_id: imported.import_id, starts: 2, profile: { parameters: ['k_phos', 'nope'] } } }));
  assert.deepEqual([unknown.code, unknown.param], ['unknown_parameter', 'petab_calibration.profile.parameters[1]']);
  const twice = errorOf(await plan(owner.key, { petab_calibration: { import_id: imported.import_id, starts: 2, profile: { parameters: ['k_phos', 'k_phos'] } } }));
  assert.deepEqual([twice.code, twice.param], ['duplicate_parameter', 'petab_calibration.profile.parameters[1]']);
  const withLab = errorOf(await plan(owner.key, { petab_calibration: { import_id: imported.import_id, starts: 2 }, lab: { workspace_id: imported.workspace_id, revision_id: imported.revision_id } }));
  assert.deepEqual([withLab.code, withLab.param], ['parameter_not_allowed', 'lab']);
  const none = errorOf(await plan(owner.key, { petab_calibration: { import_id: imported.import_id, starts: 0 } }));
  assert.equal(none.param, 'petab_calibration.starts');
});

test('through MCP: experiment_prepare plans a PEtab calibration as REST does, with its design and price', { skip }, async () => {
  const body = { name: 'Boehm by MCP', petab_calibration: { import_id: imported.import_id, starts: 16, seed: 1, profile: { parameters: [] } } };
  const rest = await call('POST', '/experiment-plans', { key: owner.key, body });
  assert.equal(rest.status, 200, rest.text);
  const client = await clients.http(owner.key);
  const mcp = (await client.callTool({ name: 'experiment_prepare', arguments: body })).structuredContent as Record<string, any>;
  assert.equal(mcp.kind, 'petab_calibration');
  assert.deepEqual(mcp.design, rest.body.design);
  assert.equal(mcp.run_count, rest.body.run_count);
  // 16 starts, at least four to a run (each run pays the engine's start-up once); nothing
  // profiled still takes the Gauss-Newton view and the fit.
  assert.equal(mcp.design.starts_per_run, 4);
  assert.equal(mcp.design.profile_runs, 1);
  assert.equal(mcp.run_count, 5);
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { call, closeTestDb, hostedLabOwner, newAccount, retireHosting, until, waitForRun } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { byCode, publicationOf, workspaceWith } from '../labWorkspaces.ts';

// Ecosystem labs that declare a runtime the default one is not: each goes workspace →
// managed runs → publication → Hub run in an environment of its own, built once.

after(closeTestDb);
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });

/**
 * Takes a fixture lab through the whole flow: two managed runs (other seeds), publication,
 * a Hub run of the release and its passport; checks the environment each step names and
 * that only the first run may build it. Returns the first run's outputs.
 */
async function throughTheFlow(lab: string, title: string, expected: { python: string; declared: RegExp; asOf?: string }): Promise<{ outputs: Record<string, unknown>; artifacts: any[] }> {
  const { key } = await newAccount({ usd: 5 });
  const { ws, revisionId } = await workspaceWith(key, title, lab);
  const runOf = async (body: Record<string, unknown>) => {
    const plan = await call('POST', '/run-plans', { key, body: { ...body, inputs: {}, max_runtime_seconds: 300 } });
    if (expected.asOf) assert.equal(plan.body.environment?.resolved_as_of, expected.asOf, JSON.stringify(plan.body));
    assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
    assert.equal(plan.body.environment.python, expected.python);
    const run = await call('POST', '/runs', { key, headers: idem(), body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
    assert.equal(run.status, 200, run.text);
    // A cold build of a large lock (tellurium's) downloads hundreds of MB first.
    const done = await waitForRun(key, run.body.id, 600_000);
    assert.equal(done.status, 'completed', JSON.stringify(done.error ?? done));
    const results = (await call('GET', `/runs/${run.body.id}/results`, { key })).body;
    const events = (await call('GET', `/runs/${run.body.id}/events?limit=100`, { key })).body.items as any[];
    return { id: run.body.id as string, plan: plan.body, results, builds: events.filter((e) => e.data?.phase === 'environment') };
  };
  const first = await runOf({ workspace_id: ws.workspace_id, revision_id: revisionId, seed: 1 });
  const own = byCode(first.plan.findings, 'environment_own')[0].message as string;
  assert.match(own, expected.declared);
  // Each reason is said once, however many models declare it.
  const reasons = /declares \(([^)]*)\)/.exec(own)![1]!.split('; ');
  assert.deepEqual(reasons, [...new Set(reasons)], own);
  // Not built yet on this deployment: the plan says about how long its build takes.
  if (first.plan.environment.status === 'build_required') assert.ok(Number.isInteger(first.plan.environment.estimated_build_seconds) && first.plan.environment.estimated_build_seconds > 0, JSON.stringify(first.plan.environment));
  assert.equal(first.results.provenance.environment_lock_sha256, first.plan.environment.lock_sha256);
  // A build (when this machine had none of this lock) is progress events, before compute is charged.
  if (first.builds.length) {
    assert.deepEqual(first.builds.map((e) => [e.type, e.data.status]), [['progress', 'building'], ['progress', 'built']]);
    process.stdout.write(`# cold build of ${lab}'s environment: ${first.builds[1].data.seconds.toFixed(1)} s\n`);
  }
  const second = await runOf({ workspace_id: ws.workspace_id, revision_id: revisionId, seed: 2 });
  assert.equal(second.plan.environment.status, 'ready', 'built once');
  assert.equal(second.plan.environment.lock_sha256, first.plan.environment.lock_sha256, 'the same declaration, the same lock');
  assert.deepEqual(second.builds, [], 'the second run builds nothing');

  // Published: packed and smoke-run in the same environment, which the release records.
  const prep = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, version: '1.0.0' } });
  assert.equal(prep.body.status, 'ready', JSON.stringify(prep.body.findings));
  await call('POST', '/publications', { key, body: { plan_id: prep.body.plan_id, plan_sha256: prep.body.plan_sha256 } });
  const publication = await publicationOf(key, prep.body.reference);
  assert.equal(publication.status, 'published', JSON.stringify(publication));
  const release = (await call('GET', `/hub/releases/${encodeURIComponent(prep.body.reference)}`, { key })).body;
  assert.equal(release.environment_lock_sha256, first.plan.environment.lock_sha256);
  assert.deepEqual(release.runtime_problems, []);
  assert.equal(release.qualification_state, 'smoke_tested', 'its smoke run ran in that environment');

  // A Hub run of the release runs in it, built already.
  const hub = await runOf({ capability_ref: prep.body.reference, seed: 3 });
  // A release keeps the environment it was published with, dated as it was (by its pins here).
  const dated = first.plan.environment.resolved_as_of;
  assert.deepEqual(hub.plan.environment, { lock_sha256: release.environment_lock_sha256, python: expected.python, status: 'ready', ...(dated ? { resolved_as_of: dated } : {}) });
  assert.deepEqual(hub.builds, [], 'runs of a release never build');
  assert.deepEqual(hub.results.outputs, first.results.outputs);
  // Its passport names the environment, verified against the recorded lock.
  const passport = await call('GET', `/passports?run_id=${hub.id}`, { key });
  assert.equal(passport.status, 200, passport.text);
  const chain = passport.body.checks.find((c: any) => c.check === 'provenance_chain');
  assert.deepEqual(chain.evidence.links.find((l: any) => l.link === 'run_environment'),
    { link: 'run_environment', run_id: hub.id, environment_lock_sha256: release.environment_lock_sha256, python: expected.python, default_runtime: false, verified: true });
  return first.results;
}

test('a lab that pins its runtime (Python 3.12, biosimulant 0.0.34) runs on exactly that, without network, from workspace to Hub run', { timeout: 900_000 }, async () => {
  const { outputs } = await throughTheFlow('pinned-runtime', 'Pinned runtime', { python: '3.12', declared: /\(runtime\.python_version "3\.12"; biosimulant==0\.0\.34\), so it runs in its own environment: Python 3\.12 with biosimulant 0\.0\.34, / });
  assert.deepEqual(outputs, { python_minor: 12, biosimulant_patch: 34, network_refused: 1 }, 'what it pinned, and no network at run time');
});

test('an SBML lab run by biosimulant\'s tellurium base with tellurium pinned computes its model, from workspace to Hub run', { timeout: 900_000 }, async () => {
  const { outputs } = await throughTheFlow('sbml-decay', 'SBML decay', { python: '3.11', declared: /\(tellurium==2\.2\.13\.1[^)]*\), so it runs in its own environment: Python 3\.11 with biosimulant 0\.0\.40, / });
  // A(10 s) = 10·e^(-0.1·10), within the integrator's tolerance.
  assert.ok(Math.abs((outputs.final_a as number) - 10 * Math.exp(-1)) < 1e-4, `final_a ${outputs.final_a}`);
});

/** An output's value, as results give it (a number, or a record with its value). */
const valueOf = (v: unknown) => (typeof v === 'object' && v !== null && 'value' in v ? (v as { value: unknown }).value : v) as number;

// The ecosystem's SBML labs (tests/fixtures/labs/ecosystem-sbml is one in their shape): an 88-character alias,
// tellurium 2.2.11.2 (uploaded 2025-12-05) on Python 3.12, six imported by tellurium but declared by nobody,
// python-dateutil 4.0.0 (2026-11-01) no longer bringing it in. Its exact pin dates it: 30 days after that upload.
const ECOSYSTEM_SBML_DAY = '2026-01-04';

test('an ecosystem SBML lab (88-character alias, tellurium 2.2.11.2 on Python 3.12, wired to a visualisation model) runs unchanged as its author ran it, with no flag: resolved as the index stood after its newest pin, from workspace to Hub run', { timeout: 900_000 }, async () => {
  const { outputs, artifacts } = await throughTheFlow('ecosystem-sbml', 'Ecosystem SBML', {
    python: '3.12', asOf: ECOSYSTEM_SBML_DAY,
    declared: new RegExp(`\\(runtime\\.python_version "3\\.12"; tellurium==2\\.2\\.11\\.2\\), so it runs in its own environment: Python 3\\.12 with biosimulant 0\\.0\\.40, \\d+ distributions locked with their hashes \\(lock sha256:[0-9a-f]{64}\\), resolved as the package index stood at the end of ${ECOSYSTEM_SBML_DAY} \\(UTC\\), 30 days after its newest exact pin, tellurium==2\\.2\\.11\\.2, was uploaded \\(2025-12-05\\); environment_as_of names another day`),
  });
  // The Bateman function at t = 4 h of a 100 mg dose (ka = ln 4, ke = ln 2 per hour), and the peak at t = 1 h.
  const exact = { gut_amount: 0.390625, central_amount: 11.71875, eliminated_amount: 87.890625, peak_central_amount: 50 };
  for (const [name, value] of Object.entries(exact)) assert.ok(Math.abs(valueOf(outputs[name]) - value) < 1e-3, `${name} ${JSON.stringify(outputs[name])}`);
  const names = artifacts.map((a) => a.file_name);
  for (const f of ['outputs.json', 'visuals.json', 'central_amount.csv', 'central_amount.svg', 'gut_amount.csv', 'state.csv']) assert.ok(names.includes(f), `${f} in ${names.join(', ')}`);
});

test('a lab whose package imports a module its environment lacks fails teaching what to declare, without the service\'s frames; declared, it runs', { timeout: 900_000 }, async () => {
  const { key } = await newAccount({ usd: 5 });
  // Planned as the index stands today (its pin would date it to a day six still came with).
  const today = new Date().toISOString().slice(0, 10);
  const run = async (lab: { ws: { workspace_id: string }; revisionId: string }) => {
    const plan = await call('POST', '/run-plans', { key, body: { workspace_id: lab.ws.workspace_id, revision_id: lab.revisionId, inputs: {}, max_runtime_seconds: 300, environment_as_of: today } });
    assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
    assert.equal(plan.body.environment.resolved_as_of, today, 'resolved as the index stands today');
    const started = await call('POST', '/runs', { key, headers: idem(), body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
    return waitForRun(key, started.body.id, 600_000);
  };
  // As the ecosystem wrote it, today's resolution has no six.
  const undeclared = await run(await workspaceWith(key, 'SBML without six', 'ecosystem-sbml'));
  assert.equal(undeclared.status, 'failed');
  assert.equal(undeclared.error.code, 'lab_error');
  const [first, ...rest] = (undeclared.error.message as string).split('\n');
  assert.match(first!, /^No module named 'six': tellurium 2\.2\.11\.2 \(tellurium\.[\w.]+\) imports it and this lab's environment does not hold it\. The package index has the distribution six \(newest \d+\.\d+\.\d+\): add "six==\d+\.\d+\.\d+" to runtime\.dependencies\.packages in models\/core\/model\.yaml\. If tellurium ran for the lab's author, its environment held six then: plan the run with environment_as_of, a day before the environment changed, to run it as it ran for them\.$/);
  const traceback = rest.join('\n');
  assert.match(traceback, /^Traceback \(most recent call last\):\n/);
  assert.match(traceback, /ModuleNotFoundError: No module named 'six'$/m);
  assert.doesNotMatch(traceback, /driver\.py/, 'none of the service\'s own frames');
  // Declared as the error says, the same lab runs to the end in today's resolution.
  const pin = /add "(six==[^"]+)"/.exec(first!)![1]!;
  const declared = await run(await workspaceWith(key, 'SBML with six', 'ecosystem-sbml', (p, t) => (p === 'models/core/model.yaml' ? t.replace('    - tellurium==2.2.11.2\n', `    - tellurium==2.2.11.2\n    - ${pin}\n`) : t)));
  assert.equal(declared.status, 'completed', JSON.stringify(declared.error));
});

test('environment_as_of is a day that has begun: a later one is refused with its parameter named', async () => {
  const { key } = await newAccount({ usd: 1 });
  const { ws, revisionId } = await workspaceWith(key, 'Dated', 'pinned-runtime');
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
  const later = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs: {}, environment_as_of: tomorrow } });
  assert.equal(later.status, 422, later.text);
  assert.deepEqual([later.body.error.code, later.body.error.param], ['parameter_out_of_range', 'environment_as_of']);
  const malformed = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs: {}, environment_as_of: '31/10/2026' } });
  assert.equal(malformed.status, 422, malformed.text);
  assert.equal(malformed.body.error.param, 'environment_as_of');
});

test('a hosted lab that pins its runtime serves invocations from warm instances in its own environment', { timeout: 600_000 }, async () => {
  const lab = await hostedLabOwner(path.join(REPO_ROOT, 'test/fixtures/labs/pinned-runtime'));
  const key = lab.owner.key;
  try {
    const plan = await call('POST', `/labs/${lab.labId}/hosting-plans`, {
      key, headers: idem(), body: { release: { reference: lab.reference, sha256: lab.sha256 }, min_instances: 1, max_instances: 1 },
    });
    assert.equal(plan.status, 201, plan.text);
    const requested = await call('POST', '/hosting-requests', { key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
    assert.equal(requested.status, 201, requested.text);
    const ready = await until(300_000, async () => {
      const h = (await call('GET', `/labs/${lab.labId}/hosting`, { key })).body;
      assert.ok(!['failed', 'rejected'].includes(h.status), JSON.stringify(h.checks));
      return h.status === 'ready' ? h : undefined;
    });
    assert.match(ready.checks.find((c: any) => c.check === 'environment').detail, /in the release's own environment \(lock sha256:[0-9a-f]{64}\)/);
    const invocation = await call('POST', '/hosted-invocation-plans', { key, headers: idem(), body: { reference: lab.reference, sha256: lab.sha256, inputs: {} } });
    assert.equal(invocation.status, 201, invocation.text);
    const started = await call('POST', '/hosted-invocations', { key, body: { plan_id: invocation.body.plan_id, plan_sha256: invocation.body.plan_sha256 } });
    assert.ok([200, 201].includes(started.status), started.text);
    const done = await until(120_000, async () => {
      const r = (await call('GET', `/hosted-invocations/${started.body.invocation_id}`, { key })).body;
      return ['completed', 'failed', 'cancelled', 'expired'].includes(r.status) ? r : undefined;
    });
    assert.equal(done.status, 'completed', JSON.stringify(done.error ?? done));
    assert.deepEqual(done.outputs, { python_minor: 12, biosimulant_patch: 34, network_refused: 1 });
  } finally {
    await retireHosting(key, lab.labId);
  }
});

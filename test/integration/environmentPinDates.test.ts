import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, closeTestDb, newAccount, spawnApi, spawnWorker, testDb, useTestProfiles, waitForRun } from '../helpers.ts';
import { byCode, workspaceWith } from '../labWorkspaces.ts';
import { startLocalIndex, type LocalIndex } from '../localPackageIndex.ts';

// A lab that pins exactly ran for its author as the index stood then. Here, as tellurium
// 2.2.11.2 imports six undeclared and python-dateutil 4.0.0 stopped bringing it: a pinned
// package imports a module only an older release of its dependency brought. A local index
// serves that history (the ecosystem's own projects passed through from PyPI, their files
// from PyPI's hosts), and an api and a worker of this file's own resolve against it and
// build from it (the build's proxy forwards reads to an index served over plain HTTP).

/** Served only by this file's worker, which builds from the local index. */
const PROFILE = { id: 'test-pin-dates', title: 'Test profile of environments from a local index' };
useTestProfiles(PROFILE);

const LEGACY = { name: 'silico-fixture-legacy', version: '1.0', dependencies: ['silico-fixture-middle'], module: 'silico_fixture_legacy', source: 'import silico_fixture_helper\n', uploaded: '2026-02-01T10:00:00Z' };
const FRESH = { name: 'silico-fixture-fresh', version: '1.0', module: 'silico_fixture_fresh', source: '', uploaded: new Date(Date.now() - 3 * 86_400_000).toISOString() };
// Older than what the service's own biosimulant needs (its uv>=0.5 came later).
const ANCIENT = { name: 'silico-fixture-ancient', version: '1.0', module: 'silico_fixture_ancient', source: '', uploaded: '2024-01-02T10:00:00Z' };
let index: LocalIndex;
let api: Awaited<ReturnType<typeof spawnApi>>;
let worker: Awaited<ReturnType<typeof spawnWorker>>;
before(async () => {
  index = await startLocalIndex([
    { name: 'silico-fixture-helper', version: '1.0', module: 'silico_fixture_helper', source: 'VALUE = 1\n', uploaded: '2024-06-01T10:00:00Z' },
    { name: 'silico-fixture-middle', version: '1.0', dependencies: ['silico-fixture-helper'], module: 'silico_fixture_middle', source: '', uploaded: '2025-01-01T10:00:00Z' },
    LEGACY,
    // A later major drops what the pinned package leaned on.
    { name: 'silico-fixture-middle', version: '2.0', module: 'silico_fixture_middle', source: '', uploaded: '2026-11-01T10:00:00Z' },
    FRESH,
    ANCIENT,
  ]);
  api = await spawnApi({ SILICO_PACKAGE_INDEX_URL: index.url });
  worker = await spawnWorker({ SILICO_PACKAGE_INDEX_URL: index.url, SILICO_PACKAGE_INDEX_HOSTS: 'files.pythonhosted.org', SILICO_COMPUTE_PROFILES: PROFILE.id });
});
after(async () => {
  await worker?.stop();
  await api?.stop();
  await index?.close();
  await closeTestDb();
});

const lockOf = async (sha: string): Promise<string> => (await testDb()('environment_locks').where({ sha256: sha }).first('lock')).lock;

/** A new account's lab pinning exactly `pin` (the fixture pinned-runtime's model otherwise), planned undated by this file's api: ready, and not dated. */
async function undatedPlan(title: string, pin: string) {
  const { key } = await newAccount({ usd: 1 });
  const { ws, revisionId } = await workspaceWith(key, title, 'pinned-runtime', (p, t) => (p === 'models/core/model.yaml' ? t.replace('["biosimulant==0.0.34"]', `["${pin}"]`) : t));
  const plan = await call('POST', '/run-plans', { key, base: api.base, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs: {}, max_runtime_seconds: 60 } });
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  assert.equal(plan.body.environment.resolved_as_of, undefined);
  return { environment: plan.body.environment, own: byCode(plan.body.findings, 'environment_own')[0].message as string };
}

test('a lab that pins exactly resolves as the index stood 30 days after its newest pin\'s upload, so what its pin leaned on is still there; the finding says so; environment_as_of overrides it; the index is asked once', { timeout: 300_000 }, async () => {
  const { key } = await newAccount({ usd: 1 });
  const { ws, revisionId } = await workspaceWith(key, 'Pinned long ago', 'pinned-runtime', (p, t) => (p === 'models/core/model.yaml' ? t.replace('["biosimulant==0.0.34"]', `["${LEGACY.name}==${LEGACY.version}"]`) : t));
  const plan = (body: Record<string, unknown> = {}) => call('POST', '/run-plans', { key, base: api.base, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs: {}, max_runtime_seconds: 60, ...body } });

  const dated = await plan();
  assert.equal(dated.status, 200, dated.text);
  assert.equal(dated.body.status, 'ready', JSON.stringify(dated.body.findings));
  assert.equal(dated.body.environment.resolved_as_of, '2026-03-03');
  assert.match(byCode(dated.body.findings, 'environment_own')[0].message,
    /resolved as the package index stood at the end of 2026-03-03 \(UTC\), 30 days after its newest exact pin, silico-fixture-legacy==1\.0, was uploaded \(2026-02-01\); environment_as_of names another day/);
  const lock = await lockOf(dated.body.environment.lock_sha256);
  assert.match(lock, /^silico-fixture-middle==1\.0 /m);
  assert.match(lock, /^silico-fixture-helper==1\.0 /m, 'what the pinned package imports, brought as it was then');
  // The service's own biosimulant pin is no lab's: it neither dates the lab nor is held back by the date.
  assert.match(lock, /^biosimulant==0\.0\.40 /m);

  // Planned again, the recorded lock answers: the index is not asked the pins' dates again.
  const pages = index.asked.length;
  const again = await plan();
  assert.equal(again.body.environment.lock_sha256, dated.body.environment.lock_sha256);
  assert.equal(index.asked.length, pages);

  // environment_as_of names the day: today's index has the later major, without the module.
  const today = new Date().toISOString().slice(0, 10);
  const now = await plan({ environment_as_of: today });
  assert.equal(now.body.status, 'ready', JSON.stringify(now.body.findings));
  assert.equal(now.body.environment.resolved_as_of, today);
  assert.doesNotMatch(byCode(now.body.findings, 'environment_own')[0].message, /newest exact pin/);
  const todays = await lockOf(now.body.environment.lock_sha256);
  assert.match(todays, /^silico-fixture-middle==2\.0 /m);
  assert.doesNotMatch(todays, /silico-fixture-helper/);
});

test('a lab whose exact pin is younger than the grace resolves as the index stands, saying why it is not dated', { timeout: 300_000 }, async () => {
  const { own } = await undatedPlan('Pinned today', `${FRESH.name}==${FRESH.version}`);
  assert.match(own, new RegExp(`resolved as the package index stood when first planned, not dated by its exact pins, since its newest exact pin, silico-fixture-fresh==1\\.0, was uploaded ${FRESH.uploaded.slice(0, 10)}, less than 30 days before today; environment_as_of names a day`));
});

test('a lab whose pins date it before what the service adds existed resolves as the index stands, saying why', { timeout: 300_000 }, async () => {
  const { own, environment } = await undatedPlan('Pinned before the runtime', `${ANCIENT.name}==${ANCIENT.version}`);
  assert.match(own, /resolved as the package index stood when first planned, not dated by its exact pins, since as of 2024-02-01 \(30 days after its newest exact pin, silico-fixture-ancient==1\.0, was uploaded \(2024-01-02\)\) its requirements cannot be resolved: [^;]*biosimulant[^;]*; environment_as_of names a day/);
  assert.match(await lockOf(environment.lock_sha256), /^silico-fixture-ancient==1\.0 /m);
});

/** A lab pinning the legacy package, whose probe imports it: as it runs (as tellurium's import of six came), or as its module loads. */
async function legacyLab(key: string, title: string, when: 'running' | 'loading') {
  return workspaceWith(key, title, 'pinned-runtime', (p, t) => {
    if (p === 'models/core/model.yaml') return t.replace('["biosimulant==0.0.34"]', `["${LEGACY.name}==${LEGACY.version}"]`);
    if (p !== 'models/core/src/probe.py') return t;
    return when === 'running'
      ? t.replace('context: ExecutionContext):\n', 'context: ExecutionContext):\n        import silico_fixture_legacy  # noqa: F401\n\n')
      : t.replace('import socket\n', 'import socket\n\nimport silico_fixture_legacy  # noqa: F401\n');
  });
}

/** What the missing module's finding says first, as the worker's index (the local one) answers. */
const TEACHING = /^No module named 'silico_fixture_helper': silico-fixture-legacy 1\.0 \(silico_fixture_legacy\) imports it and this lab's environment does not hold it\. The package index has the distribution silico-fixture-helper \(newest 1\.0\): add "silico-fixture-helper==1\.0"/;

test('the lab pinned long ago runs to the end on an environment built from the index as it stood; as the index stands today, it fails naming the module its pin imports, whether imported as it runs or as it loads', { timeout: 600_000 }, async () => {
  const { key } = await newAccount({ usd: 5 });
  const running = async (lab: { ws: { workspace_id: string }; revisionId: string }, body: Record<string, unknown> = {}) => {
    const { ws, revisionId } = lab;
    const plan = await call('POST', '/run-plans', { key, base: api.base, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs: {}, max_runtime_seconds: 120, compute_profile_id: PROFILE.id, ...body } });
    assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
    const started = await call('POST', '/runs', { key, base: api.base, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
    assert.equal(started.status, 200, started.text);
    return waitForRun(key, started.body.id, 500_000);
  };
  const asRuns = await legacyLab(key, 'Pinned long ago, run', 'running');
  const dated = await running(asRuns);
  assert.equal(dated.status, 'completed', JSON.stringify(dated.error));
  const today = { environment_as_of: new Date().toISOString().slice(0, 10) };
  const failed = await running(asRuns, today);
  assert.equal(failed.status, 'failed');
  assert.equal(failed.error.code, 'lab_error');
  assert.match(failed.error.message, TEACHING);
  // Imported as the lab's module loads, the runtime refuses the package: the same teaching.
  const refused = await running(await legacyLab(key, 'Pinned long ago, loaded', 'loading'), today);
  assert.deepEqual([refused.status, refused.error.code], ['failed', 'package_invalid']);
  assert.match(refused.error.message, TEACHING);
  assert.match(refused.error.message, /\nTraceback \(most recent call last\):\n[\s\S]*ModuleNotFoundError: No module named 'silico_fixture_helper'/);
});


import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { call, closeTestDb, downloadArtifact, newAccount, publishFixtureLab, testDb, testObjects, waitForRun } from '../helpers.ts';
import { byCode, labYamlOf, publicationOf, workspaceWith } from '../labWorkspaces.ts';

after(closeTestDb);
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
const inputs = { beta: 0.5, gamma: 0.1 };

test('an ecosystem lab (own package/version, free-text keys, UI layout, unknown keys, tolerated pins, wired visual model), uploaded into a workspace titled otherwise, goes workspace → managed run → publish under its declared package → Hub run unchanged', { timeout: 300_000 }, async () => {
  const { key, account } = await newAccount({ usd: 5 });
  const ns = account.namespace;
  const { ws, revisionId, changeFindings } = await workspaceWith(key, 'SIR for a first course', 'ecosystem-sir');
  assert.deepEqual(changeFindings.filter((f) => f.severity !== 'info'), [], 'descriptive keys are neither refused nor warned about');
  // The lab was named from the title; with no release yet, the package lab.yaml declares becomes its name.
  assert.match(byCode(changeFindings, 'lab_takes_declared_package')[0]?.message ?? '', /named ecosystem-sir once this change is applied/);
  assert.deepEqual(((await call('GET', '/labs?limit=100', { key })).body.items as any[]).map((l) => l.name), ['ecosystem-sir']);
  const unknown = byCode(changeFindings, 'unknown_keys_kept');
  assert.equal(unknown.length, 1);
  assert.match(unknown[0].message, /ui, curation_notes/);

  // Managed run: its pins (biosimulant 0.0.38, numpy 2.4.6) are not the default runtime's, so it gets its own environment.
  const plan = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs, max_runtime_seconds: 120 } });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  assert.deepEqual(byCode(plan.body.findings, 'environment_own').map((f: any) => [f.severity, f.path]), [['info', 'models/core/model.yaml#/runtime/dependencies/packages/1']]);
  // It says what the lab declares and which biosimulant the lab will actually run with: the one it pins.
  assert.match(byCode(plan.body.findings, 'environment_own')[0].message, /biosimulant==0\.0\.38[^)]*\), so it runs in its own environment: Python 3\.11 with biosimulant 0\.0\.38, /);
  assert.deepEqual(plan.body.findings.filter((f: any) => f.severity === 'blocking'), []);
  const managed = await call('POST', '/runs', { key, headers: idem(), body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(managed.status, 200, managed.text);
  const mdone = await waitForRun(key, managed.body.id, 120000);
  assert.equal(mdone.status, 'completed', JSON.stringify(mdone.error ?? mdone));
  const mres = (await call('GET', `/runs/${managed.body.id}/results`, { key })).body;
  const peak = mres.outputs.peak_infected?.value ?? mres.outputs.peak_infected;
  assert.ok(typeof peak === 'number' && peak > 0.3 && peak < 0.7, `R0 = 5 gives a large epidemic peak, got ${JSON.stringify(mres.outputs.peak_infected)}`);

  // Publication: the declared version is the one to publish; another is a finding, not a crash.
  const wrong = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, version: '1.0.0' } });
  assert.equal(wrong.status, 200, wrong.text);
  assert.equal(wrong.body.status, 'blocked');
  assert.deepEqual(byCode(wrong.body.findings, 'version_mismatch').map((f: any) => [f.severity, f.path]), [['blocking', 'version']]);
  const prep = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, version: '1.2.0' } });
  assert.equal(prep.body.status, 'ready', JSON.stringify(prep.body.findings));
  assert.equal(prep.body.reference, `${ns}/ecosystem-sir@1.2.0`);
  assert.equal(byCode(prep.body.findings, 'package_declared').length, 1);
  const pub = await call('POST', '/publications', { key, body: { plan_id: prep.body.plan_id, plan_sha256: prep.body.plan_sha256 } });
  assert.equal(pub.status, 200, pub.text);
  const publication = await publicationOf(key, prep.body.reference);
  assert.equal(publication.status, 'published', JSON.stringify(publication));

  const release = (await call('GET', `/hub/releases/${encodeURIComponent(prep.body.reference)}`, { key })).body;
  assert.equal(release.name, 'ecosystem-sir');
  assert.equal(release.version, '1.2.0');
  assert.equal(release.qualification_state, 'smoke_tested');
  assert.equal(release.intended_use, 'Teaching SIR dynamics to undergraduates');
  assert.ok(release.tags.includes('compartmental models for a first course in mathematical biology'));
  assert.deepEqual(release.manifest.ui.layout[1], { panel: 'chart', outputs: ['infected', 'peak_infected'] }, 'the UI layout is kept verbatim');
  assert.deepEqual(release.manifest.licenses, [{ spdx: 'CC-BY-4.0', applies_to: 'docs' }, 'MIT for the code']);
  assert.equal(release.manifest.curation_notes.free_text, true);
  assert.deepEqual(release.runtime_problems, []);
  // The archive is packed under what lab.yaml declares.
  const row = await testDb()('releases').where({ namespace: ns, name: 'ecosystem-sir', version: '1.2.0' }).first();
  const dir = await mkdtemp(path.join(tmpdir(), 'release-'));
  await writeFile(path.join(dir, 'r.bsilab'), await testObjects().getBytes(row.archive_key));
  const { stdout: packageYaml } = await promisify(execFile)(process.env.SILICO_PYTHON!, ['-c', 'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("package.yaml").decode())', path.join(dir, 'r.bsilab')]);
  assert.match(packageYaml, /package: ecosystem-sir\n/);
  assert.match(packageYaml, /version: 1\.2\.0\n/);

  const search = await call('GET', `/hub/search?intended_use=${encodeURIComponent('teaching SIR dynamics to undergraduates')}&limit=100`, { key });
  assert.ok(search.body.items.some((i: any) => i.ref === prep.body.reference), 'free-text intended_use is a filter');
  const text = await call('GET', '/hub/search?query=undergraduates', { key });
  assert.ok(text.body.items.some((i: any) => i.ref === prep.body.reference), 'and searchable text');

  const hub = await call('POST', '/run-plans', { key, body: { capability_ref: prep.body.reference, inputs, max_runtime_seconds: 120 } });
  assert.equal(hub.body.status, 'ready', JSON.stringify(hub.body.findings));
  assert.equal(hub.body.environment.lock_sha256, plan.body.environment.lock_sha256, 'a Hub run of the release runs in the environment its revision ran in');
  const hubRun = await call('POST', '/runs', { key, headers: idem(), body: { plan_id: hub.body.plan_id, plan_sha256: hub.body.plan_sha256 } });
  const hdone = await waitForRun(key, hubRun.body.id, 120000);
  assert.equal(hdone.status, 'completed', JSON.stringify(hdone.error ?? hdone));
  const hres = (await call('GET', `/runs/${hubRun.body.id}/results`, { key })).body;
  assert.deepEqual(hres.outputs, mres.outputs, 'the release computes what its revision computed');

  // Released, the lab is addressed by its name: declaring another package is no rename but a finding.
  const lab = await labYamlOf(key, ws.workspace_id);
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: revisionId, operations: [{ kind: 'file_put', path: 'lab.yaml', content: lab.replace('package: ecosystem-sir', 'package: sir-teaching').replace('version: 1.2.0', 'version: 1.3.0') }] } });
  assert.deepEqual(byCode(change.body.findings, 'package_mismatch').map((f: any) => [f.severity, f.path]), [['warning', 'lab.yaml#/package']]);
  const rev = await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } });
  assert.equal(rev.status, 200, rev.text);
  const next = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.body.revision_id, version: '1.3.0' } });
  assert.equal(next.body.status, 'blocked');
  assert.match(byCode(next.body.findings, 'package_mismatch')[0].message, /declares package sir-teaching, but this lab is .*\/ecosystem-sir and its releases are addressed by that name\. Declare package ecosystem-sir/);
  assert.deepEqual(((await call('GET', '/labs?limit=100', { key })).body.items as any[]).map((l) => l.name), ['ecosystem-sir']);
});

test('a declared package another lab of the namespace has blocks publication with a finding; a lab the runtime refuses is blocked in its own words, and one only its code contradicts fails publication in the runtime\'s', { timeout: 180_000 }, async () => {
  const { key } = await newAccount({ usd: 5 });

  // The runtime refuses a model entry that names a repo: the publication plan says so in its words, before anything is packed.
  const refused = await workspaceWith(key, 'Ecosystem SIR', 'ecosystem-sir', (p, t) => (p === 'lab.yaml' ? t.replace('    path: models/visualisation\n', '    path: models/visualisation\n    repo: https://example.org/plots.git\n') : t));
  assert.deepEqual(byCode(refused.changeFindings, 'runtime_refuses').map((f) => f.severity), ['warning'], 'a draft is kept');
  const prep = await call('POST', '/publication-plans', { key, body: { workspace_id: refused.ws.workspace_id, revision_id: refused.revisionId, version: '1.2.0' } });
  assert.equal(prep.body.status, 'blocked', JSON.stringify(prep.body.findings));
  assert.deepEqual(byCode(prep.body.findings, 'runtime_refuses').map((f: any) => [f.severity, f.message]),
    [['blocking', 'The lab runtime (biosimulant 0.0.40) refuses this lab: Lab model \'visualisation\' must not use repo or manifest_path']]);

  // What only the lab's code shows is judged when the runtime loads it: a model.yaml whose execution policy its
  // source contradicts passes the plan (the plan's judge sees no code) and fails publication's smoke run in the runtime's words.
  const elsewhere = (await newAccount({ usd: 5 })).key;
  const contradicted = await workspaceWith(elsewhere, 'Ecosystem SIR', 'ecosystem-sir', (p, t) => (p === 'models/visualisation/model.yaml' ? t.replace('execution_policy: each_window', 'execution_policy: once_after_run') : t));
  const packed = await call('POST', '/publication-plans', { key: elsewhere, body: { workspace_id: contradicted.ws.workspace_id, revision_id: contradicted.revisionId, version: '1.2.0' } });
  assert.equal(packed.body.status, 'ready', JSON.stringify(packed.body.findings));
  await call('POST', '/publications', { key: elsewhere, body: { plan_id: packed.body.plan_id, plan_sha256: packed.body.plan_sha256 } });
  const publication = await publicationOf(elsewhere, packed.body.reference);
  assert.equal(publication.status, 'failed');
  const [finding] = publication.findings;
  assert.equal(finding.code, 'smoke_run_failed', JSON.stringify(publication.findings));
  assert.match(finding.message, /^package_invalid: model\.yaml doesn't match the Python module: model\.yaml declares biosim\.execution_policy 'once_after_run' but PeakPlot resolves to 'each_window'/);
  assert.doesNotMatch(finding.message, /Activity task failed/);

  // The same package uploaded into a second lab: the name is the first lab's, so this one keeps its own and cannot publish.
  const second = await workspaceWith(key, 'Another SIR', 'ecosystem-sir');
  assert.deepEqual(byCode(second.changeFindings, 'package_taken').map((f) => [f.severity, f.path]), [['warning', 'lab.yaml#/package']]);
  const plan = await call('POST', '/publication-plans', { key, body: { workspace_id: second.ws.workspace_id, revision_id: second.revisionId, version: '1.2.0' } });
  assert.equal(plan.body.status, 'blocked');
  assert.match(byCode(plan.body.findings, 'package_taken')[0].message, /declares package ecosystem-sir, but another lab of .* is already named ecosystem-sir; this lab stays .*\/another-sir\./);
  assert.deepEqual(((await call('GET', '/labs?limit=100', { key })).body.items as any[]).map((l) => l.name).sort(), ['another-sir', 'ecosystem-sir']);
});

test('a lab whose declared runtime cannot be resolved is blocked at plan time in the resolver\'s words, for a managed run, at publication, and for a Hub run; a Python not provided names those that are', { timeout: 120_000 }, async () => {
  const owner = await newAccount({ usd: 5 });
  const check = (findings: any[]) => {
    const [f, ...more] = byCode(findings, 'dependencies_unsatisfiable');
    assert.equal(more.length, 0);
    assert.equal(f.severity, 'blocking');
    assert.match(f.message, /cannot be resolved for Python 3\.10 from .*: .*silico-no-such-distribution was not found in the package registry/s);
  };
  const { ws, revisionId } = await workspaceWith(owner.key, 'Pinned elsewhere', 'pinned-elsewhere');
  const managed = await call('POST', '/run-plans', { key: owner.key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs: {} } });
  assert.equal(managed.status, 200, managed.text);
  assert.equal(managed.body.status, 'blocked');
  assert.equal(managed.body.environment, null);
  check(managed.body.findings);
  const publication = await call('POST', '/publication-plans', { key: owner.key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, version: '1.0.0' } });
  assert.equal(publication.body.status, 'blocked', 'it cannot be smoke-run, so it is not published through the API');
  // A release recorded directly (as an older runtime might have) is checked from its source tree.
  const ref = await publishFixtureLab(owner, 'pinned-elsewhere');
  const hub = await call('POST', '/run-plans', { key: owner.key, body: { capability_ref: ref, inputs: {} } });
  assert.equal(hub.body.status, 'blocked');
  check(hub.body.findings);

  const older = await workspaceWith(owner.key, 'Pinned older', 'pinned-elsewhere', (_p, t) => t.replaceAll("python_version: '3.10'", "python_version: '3.9'"));
  const plan = await call('POST', '/run-plans', { key: owner.key, body: { workspace_id: older.ws.workspace_id, revision_id: older.revisionId, inputs: {} } });
  assert.equal(plan.body.status, 'blocked');
  const [unavailable] = byCode(plan.body.findings, 'python_unavailable');
  assert.equal(unavailable.path, 'lab.yaml#/runtime/python_version');
  assert.match(unavailable.message, /^Python 3\.9 is not provided here; this deployment provides (3\.\d+, )*3\.11(, 3\.\d+)*\. Declare one of them\.$/);
});

test('a lab with a 10 MB trajectory goes workspace → managed run → publish → Hub run, its CSV whole and re-hashing to its digest each time', { timeout: 300_000 }, async () => {
  const { key } = await newAccount({ usd: 5 });
  const { ws, revisionId } = await workspaceWith(key, 'Long trajectory', 'long-trajectory');
  const trajectory = async (runId: string) => {
    const done = await waitForRun(key, runId, 180000);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const res = (await call('GET', `/runs/${runId}/results`, { key })).body;
    const csv = res.artifacts.find((a: any) => a.file_name === 'phases.csv');
    const bytes = await downloadArtifact(key, runId, csv.artifact_id);
    assert.ok(bytes.length > 10_000_000, `${bytes.length} bytes`);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), csv.sha256);
    return res.outputs.phases as number[];
  };
  const plan = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs: {}, max_runtime_seconds: 300 } });
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  const managed = await call('POST', '/runs', { key, headers: idem(), body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(managed.status, 200, managed.text);
  const fromWorkspace = await trajectory(managed.body.id);

  const prep = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, version: '1.0.0' } });
  assert.equal(prep.body.status, 'ready', JSON.stringify(prep.body.findings));
  const pub = await call('POST', '/publications', { key, body: { plan_id: prep.body.plan_id, plan_sha256: prep.body.plan_sha256 } });
  assert.equal(pub.status, 200, pub.text);
  assert.equal((await publicationOf(key, prep.body.reference)).status, 'published');
  const hub = await call('POST', '/runs', { key, headers: idem(), body: { ref: prep.body.reference, inputs: {}, max_runtime_seconds: 300 } });
  assert.equal(hub.status, 200, hub.text);
  assert.deepEqual(await trajectory(hub.body.id), fromWorkspace, 'the same lab, the same final phases');
});

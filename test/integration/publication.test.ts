import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { call, errorOf, closeTestDb, newAccount, waitForRun, testDb, testObjects, until as untilWithin, withoutRequestId } from '../helpers.ts';
import { mcpClients } from '../mcpClients.ts';

const until = <T>(f: () => Promise<T | undefined>, ms = 90000) => untilWithin(ms, f);
import { sha256Hex } from '../../storage/digest.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { serviceArgs } from '../../deploy/local/serviceProcess.ts';

after(closeTestDb);
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
const { http: mcpClient } = mcpClients();

/** Reads a publication (GET /publications/{id}) until `done` says it has got where it was going. */
async function followPublication(key: string, publicationId: string, done: (p: any) => boolean): Promise<any> {
  return until(async () => {
    const r = await call('GET', `/publications/${publicationId}`, { key });
    assert.equal(r.status, 200, r.text);
    return done(r.body) ? r.body : undefined;
  });
}

/** The MCP tool publication_get's answer: its structured content, refused or not. */
async function publicationGetTool(key: string, publicationId: string): Promise<{ isError: boolean; body: any }> {
  const res = await (await mcpClient(key)).callTool({ name: 'publication_get', arguments: { publication_id: publicationId } });
  return { isError: Boolean(res.isError), body: res.structuredContent };
}

test('a lab authored from scratch runs as a managed run, is published as 1.0.0, found on the Hub, listed as a capability, and run as a Hub run', { timeout: 240_000 }, async () => {
  const { key, account } = await newAccount({ usd: 5 });
  const ns = account.namespace;
  const ws = (await call('POST', '/workspaces', { key, body: { title: 'Reaction rates' } })).body;
  const src = path.join(REPO_ROOT, 'labs/enzyme-kinetics');
  const files = ['lab.yaml', 'README.md', 'models/michaelis_menten/model.yaml', 'models/michaelis_menten/src/enzyme.py'];
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: ws.head_revision_id, operations: files.map((f) => ({ kind: 'file_put', path: f, content: readFileSync(path.join(src, f), 'utf8') })) } });
  assert.equal(change.body.status, 'ready', JSON.stringify(change.body.findings));
  const rev = (await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } })).body;

  const managed = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, inputs: {}, max_runtime_seconds: 60 } });
  const mrun = await call('POST', '/runs', { key, headers: idem(), body: { plan_id: managed.body.plan_id, plan_sha256: managed.body.plan_sha256 } });
  assert.equal((await waitForRun(key, mrun.body.id)).status, 'completed');

  const prep = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, version: '1.0.0', release_notes: 'First release.' } });
  assert.equal(prep.status, 200, prep.text);
  assert.equal(prep.body.status, 'ready', JSON.stringify(prep.body.findings));
  assert.equal(prep.body.reference, `${ns}/reaction-rates@1.0.0`);
  // The plan says who will see the release (a new lab is private) and how to change that.
  const labId = (await call('GET', `/workspaces/${ws.workspace_id}`, { key })).body.lab_id;
  assert.equal(prep.body.visibility, 'private');
  assert.match(prep.body.findings.find((f: any) => f.code === 'release_visibility' && f.severity === 'info').message, /will be private/);
  assert.deepEqual(prep.body.next_actions.map((a: any) => a.tool), ['publish_execute', 'lab_visibility_set']);
  assert.equal(prep.body.next_actions[1].arguments.lab_id, labId);
  assert.match(prep.body.next_actions[1].arguments.visibility, /^<choose: .+>$/);
  const pub = await call('POST', '/publications', { key, body: { plan_id: prep.body.plan_id, plan_sha256: prep.body.plan_sha256 } });
  assert.equal(pub.status, 200, pub.text);
  assert.equal(pub.body.status, 'publishing');
  assert.match(pub.body.publication_id, /^pub_/);
  assert.deepEqual([pub.body.release_id, pub.body.error, pub.body.findings, pub.body.finished_at], [null, null, [], null]);
  assert.deepEqual([pub.body.workspace_id, pub.body.revision_id], [ws.workspace_id, rev.revision_id]);
  assert.deepEqual(pub.body.next_actions.map((a: any) => [a.tool, a.arguments, a.http]), [['publication_get', { publication_id: pub.body.publication_id }, { method: 'GET', path: `/v1/publications/${pub.body.publication_id}` }]],
    'the answer leads to following the publication, not yet to a release');
  // Followed through its read, REST and MCP alike, to the release it records.
  const published = await followPublication(key, pub.body.publication_id, (p) => p.status !== 'publishing');
  assert.equal(published.status, 'published', JSON.stringify(published));
  assert.match(published.release_id, /^rel_/);
  assert.ok(published.finished_at >= published.created_at);
  assert.equal(published.created_at, pub.body.created_at);
  assert.deepEqual(published.next_actions.map((a: any) => [a.tool, a.arguments]), [['hub_inspect', { reference: prep.body.reference }]]);
  const tool = await publicationGetTool(key, pub.body.publication_id);
  assert.equal(tool.isError, false, JSON.stringify(tool.body));
  assert.deepEqual(withoutRequestId(tool.body), withoutRequestId(published), 'the MCP tool answers what the route answers');
  // Another account's publication is as missing as one that never was.
  const stranger = await newAccount();
  const foreign = await call('GET', `/publications/${pub.body.publication_id}`, { key: stranger.key });
  const missing = await call('GET', '/publications/pub_00000000000000000000000000', { key: stranger.key });
  assert.equal(foreign.status, 404);
  assert.deepEqual([errorOf(foreign).code, foreign.body.error.param], ['publication_not_found', 'publication_id']);
  assert.deepEqual({ ...foreign.body.error, request_id: null }, { ...missing.body.error, request_id: null });
  const foreignTool = await publicationGetTool(stranger.key, pub.body.publication_id);
  assert.deepEqual([foreignTool.isError, foreignTool.body.error.code, foreignTool.body.error.param], [true, 'publication_not_found', 'publication_id']);
  const release = (await call('GET', `/hub/releases/${encodeURIComponent(prep.body.reference)}`, { key })).body;
  assert.equal(release.visibility, 'private', 'the visibility the plan stated');
  assert.equal(release.qualification_state, 'smoke_tested');
  assert.deepEqual([release.origin.kind, release.origin.workspace_id, release.origin.revision_id, release.origin.tree_sha256, release.origin.approval], ['publication', ws.workspace_id, rev.revision_id, rev.tree_sha256, 'plan_digest'], 'origin from the records that exist');
  const evidence = (await call('GET', `/workspaces/${ws.workspace_id}?revision_id=${rev.revision_id}`, { key })).body.evidence as any[];
  assert.deepEqual(evidence.map((e) => [e.kind, e.status]), [['run', 'completed'], ['publication', 'published']], 'the revision\'s pinned evidence: its managed run and its publication');
  assert.equal(evidence[0].run_id, mrun.body.id);
  // The stored package re-hashes to its digest: the runtime's own validator checks every
  // entry and the logical hash, which must be the release's package_sha256.
  const row = await testDb()('releases').where({ namespace: ns, name: 'reaction-rates', version: '1.0.0' }).first();
  const bytes = await testObjects().getBytes(row.archive_key);
  assert.equal(`blobs/sha256/${sha256Hex(bytes)}`, row.archive_key);
  const dir = await mkdtemp(path.join(tmpdir(), 'release-'));
  await writeFile(path.join(dir, 'r.bsilab'), bytes);
  const { stdout } = await promisify(execFile)(process.env.SILICO_PYTHON!, ['-c', `import sys, json, zipfile, yaml
from biosimulant.pack import validate_package
v = validate_package(sys.argv[1])
print(json.dumps({"valid": v.valid, "errors": v.errors, "sha256": yaml.safe_load(zipfile.ZipFile(sys.argv[1]).read("package.yaml"))["sha256"]}))`, path.join(dir, 'r.bsilab')]);
  const checked = JSON.parse(stdout);
  assert.deepEqual(checked.errors, []);
  assert.equal(`sha256:${checked.sha256}`, release.package_sha256);
  assert.ok(release.files.some((f: any) => f.path === 'payload/models/michaelis_menten/src/enzyme.py'));
  const found = await call('GET', '/hub/search?query=reaction', { key });
  assert.ok(found.body.items.some((i: any) => i.ref === prep.body.reference));
  const caps = await call('GET', `/capabilities/${ns}/reaction-rates`, { key });
  assert.equal(caps.body.ref, prep.body.reference);
  assert.equal(caps.body.package_sha256, release.package_sha256);
  const hubRun = await call('POST', '/runs', { key, headers: idem(), body: { ref: `${ns}/reaction-rates`, inputs: {}, max_runtime_seconds: 60 } });
  const done = await waitForRun(key, hubRun.body.id);
  assert.equal(done.kind, 'hub');
  assert.equal(done.status, 'completed');
  const [hubOut, managedOut] = [await call('GET', `/runs/${done.id}/results`, { key }), await call('GET', `/runs/${mrun.body.id}/results`, { key })];
  assert.deepEqual(hubOut.body.outputs, managedOut.body.outputs, 'the release computes what its revision computed');
  const labs = await call('GET', '/labs', { key });
  assert.deepEqual(labs.body.items[0].releases.map((r: any) => r.ref), [prep.body.reference]);

  // Releases are immutable: the same version again, or a lower one, is refused. A plan
  // states the lab's visibility as it is now.
  assert.equal((await call('PUT', `/labs/${labId}/visibility`, { key, body: { visibility: 'public' } })).status, 200);
  const same = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, version: '1.0.0' } });
  assert.equal(same.body.visibility, 'public');
  assert.match(same.body.findings.find((f: any) => f.code === 'release_visibility').message, /will be public/);
  assert.deepEqual(same.body.next_actions.map((a: any) => a.tool), ['lab_visibility_set'], 'a blocked plan leads nowhere but to its visibility');
  assert.ok(same.body.findings.some((f: any) => f.code === 'version_exists' && f.severity === 'blocking'));
  assert.equal(errorOf(await call('POST', '/publications', { key, body: { plan_id: same.body.plan_id, plan_sha256: same.body.plan_sha256 } })).code, 'plan_blocked');
  const lower = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, version: '0.9.0' } });
  assert.ok(lower.body.findings.some((f: any) => f.code === 'version_not_greater'));
  const bad = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, version: 'one' } });
  assert.ok(bad.body.findings.some((f: any) => f.code === 'version_invalid'));
});

test('a candidate whose entrypoint file is missing is blocked before anything runs', async () => {
  const { key } = await newAccount();
  const ws = (await call('POST', '/workspaces', { key, body: { title: 'Broken' } })).body;
  const src = path.join(REPO_ROOT, 'labs/enzyme-kinetics');
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: ws.head_revision_id, operations: ['lab.yaml', 'models/michaelis_menten/model.yaml'].map((f) => ({ kind: 'file_put', path: f, content: readFileSync(path.join(src, f), 'utf8') })) } });
  const rev = (await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } })).body;
  const prep = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, version: '1.0.0' } });
  assert.equal(prep.body.status, 'blocked');
  const f = prep.body.findings.find((x: any) => x.code === 'entrypoint_missing');
  assert.equal(f.path, 'models/michaelis_menten/model.yaml#/biosim/entrypoint');
});

test('a smoke run that fails publishes nothing, and says why', { timeout: 120_000 }, async () => {
  const { key, account } = await newAccount();
  const ws = (await call('POST', '/workspaces', { key, body: { title: 'Fragile growth' } })).body;
  const src = path.join(REPO_ROOT, 'labs/microbial-growth');
  const code = readFileSync(path.join(src, 'models/growth/src/growth.py'), 'utf8')
    .replace('        t = context.window_end - context.run_start', '        raise RuntimeError("substrate exhausted the model")');
  const ops = [
    { kind: 'file_put', path: 'lab.yaml', content: readFileSync(path.join(src, 'lab.yaml'), 'utf8') },
    { kind: 'file_put', path: 'models/growth/model.yaml', content: readFileSync(path.join(src, 'models/growth/model.yaml'), 'utf8') },
    { kind: 'file_put', path: 'models/growth/src/growth.py', content: code },
  ];
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: ws.head_revision_id, operations: ops } });
  const rev = (await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } })).body;
  const prep = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, version: '1.0.0' } });
  assert.equal(prep.body.status, 'ready', JSON.stringify(prep.body.findings));
  const pub = (await call('POST', '/publications', { key, body: { plan_id: prep.body.plan_id, plan_sha256: prep.body.plan_sha256 } })).body;
  const failed = await followPublication(key, pub.publication_id, (p) => p.status !== 'publishing');
  assert.equal(failed.status, 'failed', JSON.stringify(failed));
  assert.equal(failed.error.code, 'smoke_run_failed');
  assert.match(failed.error.message, /substrate exhausted the model/);
  assert.deepEqual(failed.findings.map((f: any) => [f.code, f.path]), [['smoke_run_failed', 'lab.yaml#/smoke']]);
  assert.equal(failed.release_id, null);
  assert.ok(failed.finished_at);
  assert.deepEqual(failed.next_actions.map((a: any) => [a.tool, a.arguments.workspace_id, a.arguments.revision_id]), [
    ['workspace_get', ws.workspace_id, rev.revision_id],
    ['publish_prepare', ws.workspace_id, failed.next_actions[1].arguments.revision_id],
  ], 'what to fix, and to prepare again once fixed');
  assert.match(failed.next_actions[1].arguments.revision_id, /^<choose: .+>$/);
  assert.equal(failed.next_actions[1].arguments.version, '1.0.0');
  const tool = await publicationGetTool(key, pub.publication_id);
  assert.deepEqual(withoutRequestId(tool.body), withoutRequestId(failed), 'the MCP tool says the same');
  const lab = (await call('GET', '/labs', { key })).body.items[0];
  assert.deepEqual(lab.publications.map((p: any) => [p.publication_id, p.status]), [[pub.publication_id, 'failed']]);
  assert.equal((await call('GET', `/hub/releases/${encodeURIComponent(`${account.namespace}/fragile-growth@1.0.0`)}`, { key })).status, 404);
  const again = await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, version: '1.0.0' } });
  assert.ok(!again.body.findings.some((f: any) => f.code === 'version_exists'), 'a failed publication does not use up its version');
});

/** `npm run admin -- ...` against the test stack's database, parsed from --json. */
async function admin(...args: string[]): Promise<any> {
  const { stdout } = await promisify(execFile)(process.execPath, [...serviceArgs('deploy/admin.ts'), ...args, '--json'], { cwd: REPO_ROOT, env: process.env });
  return JSON.parse(stdout);
}

test('a workflow grant publishes a matching plan without its digest; a mismatched, foreign or revoked grant publishes nothing', { timeout: 180_000 }, async () => {
  const { key, account } = await newAccount();
  const ws = (await call('POST', '/workspaces', { key, body: { title: 'Pipeline growth' } })).body;
  const src = path.join(REPO_ROOT, 'labs/microbial-growth');
  const ops = ['lab.yaml', 'models/growth/model.yaml', 'models/growth/src/growth.py'].map((f) => ({ kind: 'file_put', path: f, content: readFileSync(path.join(src, f), 'utf8') }));
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: ws.head_revision_id, operations: ops } });
  const rev = (await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } })).body;
  const prepare = async (version: string) => (await call('POST', '/publication-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, version } })).body;

  const grant = await admin('grants', 'create', '--account', account.namespace, '--lab', 'pipeline-growth', '--versions', '^1.0.0', '--note', 'CI');
  assert.match(grant.grant_id, /^grant_/);
  const v2 = await prepare('2.0.0');
  const outside = await call('POST', '/publications', { key, body: { plan_id: v2.plan_id, grant_id: grant.grant_id } });
  assert.equal(errorOf(outside).code, 'grant_mismatch');
  assert.equal(outside.body.error.param, 'grant_id');
  const both = await call('POST', '/publications', { key, body: { plan_id: v2.plan_id, plan_sha256: v2.plan_sha256, grant_id: grant.grant_id } });
  assert.equal(errorOf(both).code, 'parameter_invalid_combination');

  const other = await newAccount();
  const foreign = await admin('grants', 'create', '--account', other.account.namespace, '--lab', '*');
  const v1 = await prepare('1.0.0');
  assert.equal(errorOf(await call('POST', '/publications', { key, body: { plan_id: v1.plan_id, grant_id: foreign.grant_id } })).code, 'grant_not_found');

  const pub = await call('POST', '/publications', { key, body: { plan_id: v1.plan_id, grant_id: grant.grant_id } });
  assert.equal(pub.status, 200, pub.text);
  assert.deepEqual(pub.body.approval, { kind: 'workflow_grant', grant_id: grant.grant_id });
  await until(async () => ((await call('GET', `/hub/releases/${encodeURIComponent(`${account.namespace}/pipeline-growth@1.0.0`)}`, { key })).status === 200 ? true : undefined));
  const [listed] = await admin('grants', 'list', '--account', account.namespace);
  assert.equal(listed.uses, 1);

  await admin('grants', 'revoke', grant.grant_id);
  const v11 = await prepare('1.1.0');
  const revoked = await call('POST', '/publications', { key, body: { plan_id: v11.plan_id, grant_id: grant.grant_id } });
  assert.equal(errorOf(revoked).code, 'grant_inactive');
  assert.equal(revoked.body.error.details.reason, 'revoked');
  // Nothing was consumed by the refusals: the same plans still publish by their digests.
  const byDigest = await call('POST', '/publications', { key, body: { plan_id: v11.plan_id, plan_sha256: v11.plan_sha256 } });
  assert.equal(byDigest.status, 200, byDigest.text);
  assert.equal(byDigest.body.approval.kind, 'plan_digest');
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { BASE_URL, call, errorOf, closeTestDb, newAccount, testDb, testObjects, waitForRun } from '../helpers.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { getAccount } from '../../storage/db/accounts.ts';
import { tool } from '../../api/tools/index.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { digestJson, sha256Hex } from '../../storage/digest.ts';

after(closeTestDb);

const LAB = path.join(REPO_ROOT, 'labs/predator-prey');
const read = (p: string) => readFileSync(path.join(LAB, p), 'utf8');
/** Every file of the built-in lab, as a person authoring it from scratch would send them. */
const labFiles = ['lab.yaml', ...readdirSync(path.join(LAB, 'models'), { recursive: true, withFileTypes: true })
  .filter((d) => d.isFile() && !d.parentPath.includes('__pycache__'))
  .map((d) => path.relative(LAB, path.join(d.parentPath, d.name)))];

async function workspace(key: string, title = 'Predators and prey') {
  const ws = await call('POST', '/workspaces', { key, body: { title } });
  assert.equal(ws.status, 200, ws.text);
  return ws.body;
}
const prepare = (key: string, wsId: string, base: string, operations: unknown[]) =>
  call('POST', `/workspaces/${wsId}/change-plans`, { key, body: { base_revision_id: base, operations } });
const apply = (key: string, plan: any) => call('POST', '/workspace-revisions', { key, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } });

test('a workspace changes only through approved plans, each making an immutable revision', async () => {
  const { key } = await newAccount();
  const ws = await workspace(key);
  assert.equal(ws.revision.number, 1);
  assert.equal(ws.revision.file_count, 0);
  const ok = await prepare(key, ws.workspace_id, ws.head_revision_id, labFiles.map((f) => ({ kind: 'file_put', path: f, content: read(f) })));
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.body.plan_sha256, digestJson(ok.body.digest_input), 'the digest is recomputable');
  assert.equal(ok.body.status, 'ready', JSON.stringify(ok.body.findings));
  const notYet = await call('GET', `/workspaces/${ws.workspace_id}`, { key });
  assert.equal(notYet.body.head_revision_id, ws.head_revision_id, 'preparing never changes the head');
  const rev = await apply(key, ok.body);
  assert.equal(rev.status, 200, rev.text);
  assert.equal(rev.body.number, 2);
  assert.equal(rev.body.tree_sha256, ok.body.tree_sha256);
  const got = await call('GET', `/workspaces/${ws.workspace_id}`, { key });
  assert.equal(got.body.head_revision_id, rev.body.revision_id);
  const yaml = got.body.revision.files.find((f: any) => f.path === 'lab.yaml');
  assert.equal(yaml.content, read('lab.yaml'));
  assert.equal(yaml.sha256, sha256Hex(read('lab.yaml')));
  assert.equal(got.body.warnings[0].code, 'untrusted_content');
  const first = await call('GET', `/workspaces/${ws.workspace_id}?revision_id=${ws.head_revision_id}`, { key });
  assert.equal(first.body.revision.file_count, 0, 'revision 1 is unchanged');
  const again = await apply(key, ok.body);
  assert.equal(errorOf(again).code, 'plan_unavailable');
  assert.match(String(errorOf(again).details.result_ref), /^revision:/, 'a used plan names what it made');
});

test('two plans on the same base: the first apply wins, the second is 409 plan_unavailable, nothing half-applied', async () => {
  const { key } = await newAccount();
  const ws = await workspace(key);
  const a = await prepare(key, ws.workspace_id, ws.head_revision_id, [{ kind: 'file_put', path: 'notes/a.md', content: 'a' }]);
  const b = await prepare(key, ws.workspace_id, ws.head_revision_id, [{ kind: 'file_put', path: 'notes/b.md', content: 'b' }]);
  const [ra, rb] = await Promise.all([apply(key, a.body), apply(key, b.body)]);
  const won = [ra, rb].filter((r) => r.status === 200);
  const lost = [ra, rb].filter((r) => r.status !== 200);
  assert.equal(won.length, 1);
  assert.equal(errorOf(lost[0]!).code, 'plan_unavailable');
  assert.ok('result_ref' in errorOf(lost[0]!).details, 'details.result_ref is always there (null: its base moved)');
  const got = await call('GET', `/workspaces/${ws.workspace_id}`, { key });
  assert.equal(got.body.revision.number, 2);
  assert.equal(got.body.revision.file_count, 1);
});

test('naming: duplicate and empty aliases block; any alias the runtime takes passes; a rename leaving wiring behind warns; title changes are advisory; the rest the runtime judges', async () => {
  const { key } = await newAccount();
  const ws = await workspace(key);
  const model = 'biosim: { entrypoint: "src.m:M" }\n';
  const module = 'from biosim import BioModule\n\n\nclass M(BioModule):\n    pass\n';
  const base = `schema_version: "2.0"\ntitle: Two\nmodels:\n  - { alias: prey, path: models/a }\n  - { alias: predator, path: models/b }\nwiring:\n  - { from: prey.x, to: [predator.x] }\nruntime: { duration: 1, communication_step: 1 }\nio:\n  outputs:\n    - { name: x, maps_to: prey.x }\n`;
  const first = await prepare(key, ws.workspace_id, ws.head_revision_id, [
    { kind: 'file_put', path: 'lab.yaml', content: base }, { kind: 'file_put', path: 'models/a/model.yaml', content: model }, { kind: 'file_put', path: 'models/b/model.yaml', content: model },
    { kind: 'file_put', path: 'models/a/src/m.py', content: module }, { kind: 'file_put', path: 'models/b/src/m.py', content: module },
  ]);
  assert.equal(first.body.status, 'ready', JSON.stringify(first.body.findings));
  assert.deepEqual(first.body.findings.map((f: any) => [f.severity, f.code]), [['info', 'runtime_accepts']], 'what the runtime accepts it says it accepts');
  assert.match(first.body.findings[0].message, /^The lab runtime \(biosimulant 0\.0\.40\) accepts these manifests, and every model's entrypoint module is in the tree\./);
  const head = (await apply(key, first.body)).body.revision_id;
  const findings = async (yaml: string) => (await prepare(key, ws.workspace_id, head, [{ kind: 'file_put', path: 'lab.yaml', content: yaml }])).body.findings as any[];
  // The runtime's acceptance aside: what else is said of each lab.yaml.
  const codes = async (yaml: string) => (await findings(yaml)).filter((f: any) => f.code !== 'runtime_accepts').map((f: any) => `${f.severity}:${f.code}`);
  assert.ok((await codes(base.replace('alias: predator', 'alias: prey'))).includes('blocking:alias_duplicate'));
  assert.ok((await codes(base.replace('alias: predator', 'alias: " "'))).includes('blocking:alias_invalid'));
  assert.deepEqual(await codes(base.replaceAll('prey', 'rabbit')), [], 'alias, wiring and io renamed together');
  // What the ecosystem's generators write: 88 characters, upper case, hyphens and dots are the runtime's to take.
  const long = 'epidemiology_sbml_fang2020_seir_model_of_covid_19_transmission_con_biomd0000000984_model';
  for (const alias of [long, 'Predator-1', 'pred.ator']) assert.deepEqual(await codes(base.replaceAll('predator', alias)), [], alias);
  assert.deepEqual(await codes(base.replace('alias: prey', 'alias: rabbit')), ['warning:alias_missing', 'warning:alias_missing']);
  assert.deepEqual(await codes(base.replace('title: Two', 'title: Three')), ['info:title_changed']);
  assert.ok((await codes(base.replace('alias: predator', `alias: ${'p'.repeat(201)}`))).includes('blocking:manifest_invalid'), 'Silico\'s bound on a name');
  // The rest of the format is the runtime's: in its words, a warning while the lab is a draft.
  const modelsAs = (v: string) => base.replace(/^models:\n(  - .*\n)+/m, `models: ${v}\n`);
  const cases: Array<[string, RegExp]> = [
    [modelsAs('abc'), /non-empty models list/], [modelsAs('5'), /non-empty models list/],
    [base.replace(/^wiring:\n  - .*\n/m, 'wiring: 5\n'), /wiring list/], [`${base}children: 7\n`, /children entries must be a list/],
  ];
  for (const [yaml, said] of cases) {
    const got = (await findings(yaml)).filter((f: any) => f.code === 'runtime_refuses');
    assert.equal(got.length, 1, yaml);
    assert.equal(got[0].severity, 'warning');
    assert.match(got[0].message, /^The lab runtime \(biosimulant 0\.0\.40\) refuses this lab as it stands: /);
    assert.match(got[0].message, said, yaml);
  }
  const missingModel = (await findings(base.replace('models/b', 'models/c'))).filter((f: any) => f.code === 'runtime_refuses');
  assert.match(missingModel[0]?.message ?? '', /Embedded dependency path not found: models\/c/);
  // Where the runtime looks for an entrypoint's module (<module>.py or <module>/__init__.py in
  // the model's folder): one it would not find there is a warning on a draft, in a child lab too.
  const entrypoints = async (ops: unknown[]) => (await prepare(key, ws.workspace_id, head, ops)).body.findings
    .filter((f: any) => f.code.startsWith('entrypoint_')).map((f: any) => [f.severity, f.code, f.path]);
  const entry = (e: string) => ({ kind: 'file_put', path: 'models/b/model.yaml', content: `biosim: { entrypoint: "${e}" }\n` });
  assert.deepEqual(await entrypoints([entry('src.n:M')]), [['warning', 'entrypoint_missing', 'models/b/model.yaml#/biosim/entrypoint']]);
  assert.deepEqual(await entrypoints([entry('src.n:M'), { kind: 'file_put', path: 'models/b/src/n/__init__.py', content: module }]), [], 'a package is a module too');
  assert.deepEqual(await entrypoints([entry('M')]), [['warning', 'entrypoint_invalid', 'models/b/model.yaml#/biosim/entrypoint']]);
  const child = [
    { kind: 'file_put', path: 'lab.yaml', content: `${base}children:\n  - { alias: inner, path: labs/inner }\n` },
    { kind: 'file_put', path: 'labs/inner/lab.yaml', content: 'models:\n  - { alias: c, path: models/c }\nwiring: []\nruntime: { duration: 1, communication_step: 1 }\n' },
    { kind: 'file_put', path: 'labs/inner/models/c/model.yaml', content: model },
  ];
  assert.deepEqual(await entrypoints(child), [['warning', 'entrypoint_missing', 'labs/inner/models/c/model.yaml#/biosim/entrypoint']]);
  // YAML's "\0" is U+0000, which no plan or release could store: one blocking finding, no 500.
  assert.deepEqual(await codes(base.replace('alias: predator', 'alias: "pred\\0ator"')), ['blocking:manifest_invalid']);
  // A draft the runtime refuses is kept; running it is blocked, in the runtime's words.
  const draft = await prepare(key, ws.workspace_id, head, [{ kind: 'file_put', path: 'lab.yaml', content: base.replace('models/b', 'models/c') }]);
  assert.equal(draft.body.status, 'ready', JSON.stringify(draft.body.findings));
  const revision = (await apply(key, draft.body)).body.revision_id;
  const plan = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: revision, inputs: {} } });
  assert.equal(plan.body.status, 'blocked', plan.text);
  assert.deepEqual(plan.body.findings.filter((f: any) => f.code === 'runtime_refuses').map((f: any) => [f.severity, f.message]),
    [['blocking', 'The lab runtime (biosimulant 0.0.40) refuses this lab: Embedded dependency path not found: models/c']]);
});

test('paths and content are refused with precise codes', async () => {
  const { key } = await newAccount();
  const ws = await workspace(key);
  const bad: Array<[unknown, string, string]> = [
    [{ kind: 'file_put', path: '../etc/passwd', content: 'x' }, 'path_traversal', 'operations[0].path'],
    [{ kind: 'file_put', path: '/abs.txt', content: 'x' }, 'path_absolute', 'operations[0].path'],
    [{ kind: 'file_put', path: 'a//b.txt', content: 'x' }, 'path_invalid', 'operations[0].path'],
    [{ kind: 'file_put', path: `${'é'.repeat(130)}.txt`, content: 'x' }, 'path_too_long', 'operations[0].path'],
    [{ kind: 'file_put', path: 'bin.dat', content: 'ok\ud800' }, 'parameter_invalid_format', 'operations[0].content'],
    [{ kind: 'file_put', path: 'nul.txt', content: 'a\u0000b' }, 'parameter_invalid_format', 'operations[0].content'],
    [{ kind: 'file_put', path: 'bin.dat', content_base64: 'not base64!' }, 'content_base64_invalid', 'operations[0].content_base64'],
    [{ kind: 'file_put', path: 'x.txt', content: 'a', content_base64: 'YQ==' }, 'parameter_invalid_combination', 'operations[0].content'],
    [{ kind: 'file_delete', path: 'missing.txt' }, 'path_not_found', 'operations[0].path'],
    [{ kind: 'file_move', path: 'missing.txt', to: 'x.txt' }, 'path_not_found', 'operations[0].path'],
  ];
  for (const [op, code, param] of bad) {
    const r = await prepare(key, ws.workspace_id, ws.head_revision_id, [op]);
    assert.equal(r.status, 422, `${code}: ${r.text}`);
    assert.equal(errorOf(r).code, code);
    assert.equal(errorOf(r).param, param);
  }
});

test('a tree over 64 MiB is refused with tree_too_large; the revisions before it stand', { timeout: 300_000 }, async () => {
  const { key } = await newAccount();
  const ws = await workspace(key);
  const chunk = 'x'.repeat(700_000);
  let head = ws.head_revision_id;
  let refused: any;
  for (let i = 0; i < 120 && !refused; i++) {
    const p = await prepare(key, ws.workspace_id, head, [{ kind: 'file_put', path: `data/${i}.txt`, content: chunk }]);
    if (p.status !== 200) {
      refused = { i, res: p };
      break;
    }
    head = (await apply(key, p.body)).body.revision_id;
  }
  assert.ok(refused, 'the tree bound was reached');
  assert.equal(refused.i, Math.floor((64 * 1024 * 1024) / 700_000), 'refused exactly when the total passes 64 MiB');
  assert.equal(errorOf(refused.res).code, 'tree_too_large');
  const got = await call('GET', `/workspaces/${ws.workspace_id}`, { key });
  assert.equal(got.body.head_revision_id, head);
  assert.equal(got.body.revision.file_count, refused.i);
  assert.ok(got.body.revision.files.every((f: any) => f.truncated && f.content.length === 64 * 1024), 'reads are bounded to 64 KiB per file');
});

test("another account's workspace is answered exactly like a missing one", async () => {
  const a = await newAccount();
  const b = await newAccount();
  const ws = await workspace(a.key);
  const foreign = await call('GET', `/workspaces/${ws.workspace_id}`, { key: b.key });
  const missing = await call('GET', `/workspaces/${crypto.randomUUID()}`, { key: b.key });
  assert.equal(errorOf(foreign).code, 'workspace_not_found');
  const strip = (t: string) => t.replace(/[0-9a-f-]{36}/g, 'ID');
  assert.equal(strip(foreign.text), strip(missing.text));
  const list = await call('GET', '/workspaces', { key: b.key });
  assert.deepEqual(list.body.items, []);
  const mine = await call('GET', '/workspaces?query=predators', { key: a.key });
  assert.deepEqual(mine.body.items.map((w: any) => w.workspace_id), [ws.workspace_id]);
});

test('a workspace revision runs as a managed run, priced like a Hub run, to the same known answer', async () => {
  const { key } = await newAccount({ usd: 5 });
  const ws = await workspace(key, 'My growth curve');
  const dir = path.join(REPO_ROOT, 'labs/microbial-growth');
  const files = ['lab.yaml', 'models/growth/model.yaml', 'models/growth/src/growth.py'];
  const p = await prepare(key, ws.workspace_id, ws.head_revision_id, files.map((f) => ({ kind: 'file_put', path: f, content: readFileSync(path.join(dir, f), 'utf8') })));
  const rev = (await apply(key, p.body)).body;
  const plan = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, inputs: { initial_biomass: 0.5 }, max_runtime_seconds: 120 } });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  assert.equal(plan.body.estimated_max_usd, 0.0012);
  assert.equal(plan.body.package_sha256, `sha256:${rev.tree_sha256}`);
  const run = await call('POST', '/runs', { key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(run.status, 200, run.text);
  assert.equal(run.body.kind, 'managed');
  assert.match(run.body.resolved_ref, /\/my-growth-curve@rev-2$/);
  const done = await waitForRun(key, run.body.id, 60000);
  assert.equal(done.status, 'completed', JSON.stringify(done.error));
  const results = await call('GET', `/runs/${run.body.id}/results`, { key });
  const k = 0.5 + 0.5 * 10;
  assert.ok(Math.abs(results.body.outputs.biomass - k / (1 + ((k - 0.5) / 0.5) * Math.exp(-0.5 * 24))) < 1e-9);
  // An input schema ajv cannot compile is the lab's fault: a blocking finding, not a 500.
  const broken = readFileSync(path.join(dir, 'lab.yaml'), 'utf8').replace('schema: { type: number, exclusiveMinimum: 0, maximum: 1000 }', 'schema: { type: bogus }');
  assert.notEqual(broken, readFileSync(path.join(dir, 'lab.yaml'), 'utf8'));
  const bp = await prepare(key, ws.workspace_id, rev.revision_id, [{ kind: 'file_put', path: 'lab.yaml', content: broken }]);
  assert.equal(bp.body.status, 'ready', JSON.stringify(bp.body.findings));
  const brokenRev = (await apply(key, bp.body)).body;
  const badPlan = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: brokenRev.revision_id, inputs: { initial_biomass: 0.5 } } });
  assert.equal(badPlan.status, 200, badPlan.text);
  assert.ok(badPlan.body.findings.some((f: any) => f.code === 'input_schema_invalid' && f.severity === 'blocking'), JSON.stringify(badPlan.body.findings));
  const unknown = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.revision_id, inputs: { nope: 1 } } });
  assert.equal(errorOf(unknown).code, 'unknown_inputs');
  const empty = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: ws.head_revision_id, inputs: {} } });
  assert.equal(errorOf(empty).code, 'manifest_missing');
});

test('forking an exact Hub release copies its tree as revision 1 and records the origin', async () => {
  const { key } = await newAccount({ usd: 5 });
  const inspect = await call('GET', `/hub/releases/${encodeURIComponent('platform/enzyme-kinetics@1.0.0')}`, { key });
  const sha = inspect.body.package_sha256.replace('sha256:', '');
  const wrong = await call('POST', '/workspaces', { key, body: { title: 'Mine', fork: { reference: 'platform/enzyme-kinetics@1.0.0', sha256: 'a'.repeat(64) } } });
  assert.equal(errorOf(wrong).code, 'checksum_mismatch');
  assert.equal(errorOf(wrong).param, 'fork.sha256');
  const ws = await call('POST', '/workspaces', { key, body: { title: 'My enzyme study', fork: { reference: 'platform/enzyme-kinetics@1.0.0', sha256: sha } } });
  assert.equal(ws.status, 200, ws.text);
  assert.equal(ws.body.origin.reference, 'platform/enzyme-kinetics@1.0.0');
  assert.equal(ws.body.origin.package_sha256, inspect.body.package_sha256);
  const got = await call('GET', `/workspaces/${ws.body.workspace_id}`, { key });
  const paths = got.body.revision.files.map((f: any) => f.path);
  assert.ok(paths.includes('lab.yaml') && paths.some((p: string) => p.endsWith('.py')), paths.join(','));
  const labYaml = got.body.revision.files.find((f: any) => f.path === 'lab.yaml');
  assert.equal(labYaml.content, readFileSync(path.join(REPO_ROOT, 'labs/enzyme-kinetics/lab.yaml'), 'utf8'));
  const run = await call('POST', '/runs', { key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/enzyme-kinetics', inputs: {} } });
  const plan = await call('POST', '/run-plans', { key, body: { workspace_id: ws.body.workspace_id, revision_id: ws.body.head_revision_id, inputs: {}, max_runtime_seconds: 60 } });
  const managed = await call('POST', '/runs', { key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  const [hub, mine] = [await waitForRun(key, run.body.id), await waitForRun(key, managed.body.id)];
  assert.equal(mine.status, 'completed', JSON.stringify(mine.error));
  const [hr, mr] = [await call('GET', `/runs/${hub.id}/results`, { key }), await call('GET', `/runs/${mine.id}/results`, { key })];
  assert.deepEqual(mr.body.outputs, hr.body.outputs, 'the fork computes what the release computes');
});

test('naming rule 1: a new lab is named from its title, a fork keeps its source name, a taken name gets a suffix, and the findings say so and point at the naming skill', async () => {
  const { key, account } = await newAccount();
  const first = await call('POST', '/workspaces', { key, body: { title: 'Tumour Growth (v2)!' } });
  assert.equal(first.status, 200, first.text);
  assert.equal(first.body.lab_name, 'tumour-growth-v2');
  assert.deepEqual(first.body.findings.map((f: any) => f.code), ['lab_named']);
  assert.match(first.body.findings[0].message, new RegExp(`${account.namespace}/tumour-growth-v2@<version>.*GET /v1/skills/naming`));
  assert.equal(first.body.links.naming_skill, '/v1/skills/naming');
  const again = await call('POST', '/workspaces', { key, body: { title: 'Tumour growth v2' } });
  assert.equal(again.body.lab_name, 'tumour-growth-v2-2');
  assert.deepEqual(again.body.findings.map((f: any) => f.code), ['lab_named', 'lab_name_suffixed']);
  const release = (await call('GET', `/hub/releases/${encodeURIComponent('platform/predator-prey@1.0.0')}`, { key })).body;
  const fork = await call('POST', '/workspaces', { key, body: { title: 'My own take on it', fork: { reference: 'platform/predator-prey@1.0.0', sha256: release.package_sha256.replace(/^sha256:/, '') } } });
  assert.equal(fork.status, 200, fork.text);
  assert.equal(fork.body.lab_name, 'predator-prey', 'the source name is preserved, not the new title');
  assert.match(fork.body.findings[0].message, /from the release it forks/);
});

test('file_put with a file_id puts the bytes of one of the caller\'s files; another account\'s file is the same 404 as a missing one', async () => {
  const { key } = await newAccount();
  const ws = await workspace(key);
  const form = new FormData();
  form.append('file', new Blob(['t,x\n0,1\n']), 'series.csv');
  const f = (await (await fetch(`${BASE_URL}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form })).json()) as any;
  const plan = await prepare(key, ws.workspace_id, ws.head_revision_id, [{ kind: 'file_put', path: 'data/series.csv', file_id: f.file_id }]);
  assert.equal(plan.status, 200, plan.text);
  assert.deepEqual(plan.body.operations, [{ kind: 'file_put', path: 'data/series.csv', sha256: f.sha256, size: f.size_bytes }]);
  const other = await newAccount();
  const ow = await workspace(other.key);
  const theirs = await prepare(other.key, ow.workspace_id, ow.head_revision_id, [{ kind: 'file_put', path: 'x.csv', file_id: f.file_id }]);
  const missing = await prepare(other.key, ow.workspace_id, ow.head_revision_id, [{ kind: 'file_put', path: 'x.csv', file_id: crypto.randomUUID() }]);
  assert.equal(errorOf(theirs).code, 'file_not_found');
  assert.equal(errorOf(theirs).param, 'operations[0].file_id');
  assert.deepEqual({ ...errorOf(theirs), request_id: null }, { ...errorOf(missing), request_id: null });
});

test('reading a workspace reads at most 64 KiB of each file from the store, however large the file', async () => {
  const owner = await newAccount();
  const ws = await workspace(owner.key);
  const big = 'x'.repeat(600 * 1024);
  const plan = await prepare(owner.key, ws.workspace_id, ws.head_revision_id, [{ kind: 'file_put', path: 'data/big.txt', content: big }, { kind: 'file_put', path: 'notes.md', content: 'small' }]);
  assert.equal((await apply(owner.key, plan.body)).status, 200);
  // The operation itself, on the stack's real store, with every byte it reads counted.
  let read = 0;
  const store = testObjects();
  const counted: ObjectStore = {
    ...store,
    async getBytes(key) {
      const bytes = await store.getBytes(key);
      read += bytes.length;
      return bytes;
    },
    async getStream(key, range) {
      const got = await store.getStream(key, range);
      got.body.on('data', (c: Buffer) => { read += c.length; });
      return got;
    },
  };
  const caller = { account: (await getAccount(testDb(), owner.account.id))!, key: {} as never };
  const result = await tool('workspace_get').handler!({ workspace_id: ws.workspace_id }, { deps: { db: testDb(), objects: counted } as never, caller, requestId: 'test' });
  const files = (result.body.revision as { files: Array<{ path: string; content: string; truncated: boolean }> }).files;
  assert.equal(files.find((f) => f.path === 'data/big.txt')!.content, big.slice(0, 64 * 1024));
  assert.equal(files.find((f) => f.path === 'data/big.txt')!.truncated, true);
  assert.equal(files.find((f) => f.path === 'notes.md')!.content, 'small');
  assert.ok(read <= 64 * 1024 + 'small'.length, `read ${read} bytes to show ${64 * 1024 + 5}`);
});

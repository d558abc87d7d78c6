import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { call, errorOf, closeTestDb, BASE_URL } from '../helpers.ts';
import { ROUTES, fillPath } from '../../api/routeTable.ts';
import { TOOLS } from '../../api/tools/index.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { CONTRACT_ROUTES, routeKey } from '../contract.ts';
import { SCALAR_SCRIPT } from '../../api/docs.ts';

after(closeTestDb);
const ID = '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d';
const SHA = 'a'.repeat(64);

/** Minimal valid inputs for every not-yet-implemented operation (they must pass validation and reach 501). */
const VALID: Record<string, { path?: Record<string, string>; query?: string; body?: unknown }> = {
  run_prepare: { body: { capability_ref: 'platform/x@1.0.0', inputs: {} } },
  run_create: { body: { plan_id: ID, plan_sha256: SHA } },
  hub_inspect: { path: { reference: 'platform/x@1.0.0' } },
  biology_search: { body: { source_ids: ['uniprot'], query: 'p53' } },
  biology_fetch: { body: { source_id: 'uniprot', record_ids: ['P04637'] } },
  lab_update: { body: { title: 'x' } },
  lab_visibility_set: { body: { visibility: 'private' } },
  workspace_create: { body: { title: 'x' } },
  workspace_change_prepare: { body: { base_revision_id: ID, operations: [{ kind: 'file_put', path: 'lab.yaml', content: 'x' }] } },
  workspace_change_apply: { body: { plan_id: ID, plan_sha256: SHA } },
  experiment_create: { body: { plan_id: ID, plan_sha256: SHA } },
  experiment_prepare: { body: { name: 'x', arms: [{ label: 'a', workspace_id: ID, revision_id: ID }] } },
  experiment_update: { body: { name: 'y' } },
  publish_prepare: { body: { workspace_id: ID, revision_id: ID, version: '1.0.0', release_notes: '' } },
  publish_execute: { body: { plan_id: ID, plan_sha256: SHA } },
  hosting_update: { body: { revision: 1, action: 'pause' } },
  hosting_prepare: { body: { release: { reference: 'platform/x@1.0.0', sha256: SHA } } },
  hosting_execute: { body: { plan_id: ID, plan_sha256: SHA } },
  file_import_from_run: { body: { run_id: ID, artifact_id: 'art_x', expected_sha256: SHA } },
  dataset_register: { body: { name: 'x', source: 's', license: 'CC0', attribution: 'a', annotation_version: '1', members: [{ file_id: ID, sha256: SHA, size_bytes: 1, sample_id: 's', group_id: 'g', role: 'image', split: 'train' }] } },
  hosted_release_get: { query: `sha256=${SHA}` },
  hosted_invocation_prepare: { body: { reference: 'platform/x@1.0.0', sha256: SHA } },
  hosted_invocation_execute: { body: { plan_id: ID, plan_sha256: SHA } },
  session_validate: { body: {} },
  session_completion_check: { body: {} },
  session_workspace_create: { body: {} },
};
const PATH_ARGS = { namespace: 'platform', name: 'naming', reference: 'platform%2Fx%401.0.0', lab_id: 'lab_x', workspace_id: ID, experiment_id: 'exp_x', file_id: ID, dataset_id: 'ds_x', invocation_id: 'inv_x', port: 'out', run_id: ID, artifact_id: 'art_x', session_id: 'ses_x' };

test('GET /v1/openapi.json is OpenAPI 3.1 with every route of the contract, its scope, parameters, body and responses', async () => {
  const res = await call('GET', '/openapi.json', { key: null });
  assert.equal(res.status, 200);
  const doc = res.body;
  assert.equal(doc.openapi, '3.1.0');
  // Matched as its router matches it: any case, a trailing slash or none.
  for (const variant of ['/openapi.json/', '/OpenAPI.json']) assert.equal((await call('GET', variant, { key: null })).status, 200, variant);
  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) => Object.keys(ops).filter((m) => m !== 'parameters').map((m) => `${m.toUpperCase()} ${p}`));
  assert.deepEqual(documented.sort(), CONTRACT_ROUTES.map(routeKey).sort(), 'OpenAPI documents exactly the contract\'s routes (docs/contract/routes.json)');
  for (const c of CONTRACT_ROUTES) {
    const op = doc.paths[c.path][c.method.toLowerCase()];
    assert.equal(op.operationId, c.tool, `${routeKey(c)} operationId`);
    assert.equal(op['x-required-scope'], c.scope, `${routeKey(c)} scope`);
    assert.ok(op.responses[String(c.success)], `${routeKey(c)} ${c.success}`);
    if (c.not_found) assert.ok(op.responses['404'], `${routeKey(c)} 404`);
    assert.equal(Boolean(op.responses['422']), !c.no_422 && !c.signed, `${routeKey(c)} 422`);
    assert.equal(op['x-spec-addition'], c.source === 'addition', `${routeKey(c)} is marked an addition exactly when it is one`);
    if (c.idempotency) assert.ok(op.parameters.some((p: any) => p.name === 'Idempotency-Key' && p.required === (c.idempotency === 'required')), `${routeKey(c)} Idempotency-Key`);
  }
  // What the spec's conventions say of every route, and each operation's own path parameters.
  for (const r of ROUTES) {
    const op = doc.paths[r.path][r.method.toLowerCase()];
    const tool = TOOLS.get(r.tool)!;
    // The payment provider's route takes no key: a bad signature is its 400.
    for (const c of r.signed ? ['400', '429', '500'] : ['401', '403', '429', '500']) assert.ok(op.responses[c], `${r.method} ${r.path} ${c}`);
    assert.deepEqual(op.security, r.signed ? [] : [{ apiKey: [] }], `${r.method} ${r.path} security`);
    for (const name of Object.keys(tool.input.path ?? {})) assert.ok(op.parameters.some((p: any) => p.in === 'path' && p.name === name));
    assert.equal(op['x-implemented'], Boolean(tool.handler));
    if (!tool.handler) assert.ok(op.responses['501'], `${r.path} lists 501`);
  }
});

test('every route of the spec is built: none answers 501, and OpenAPI says so', async () => {
  const doc = (await call('GET', '/openapi.json', { key: null })).body;
  assert.deepEqual(ROUTES.filter((r) => !TOOLS.get(r.tool)!.handler).map((r) => `${r.method} ${r.path}`), []);
  for (const r of ROUTES) {
    const op = doc.paths[r.path][r.method.toLowerCase()];
    assert.equal(op['x-implemented'], true, `${r.method} ${r.path}`);
    // Only buying lists a 501: payments_not_configured, on a server without a provider key.
    assert.equal(op.responses['501'] !== undefined, r.group === 'purchases', `${r.method} ${r.path} lists a 501 only if it buys`);
  }
});

test('the OpenAPI document passes redocly lint', async () => {
  const doc = (await call('GET', '/openapi.json', { key: null })).body;
  const dir = await mkdtemp(path.join(tmpdir(), 'openapi-'));
  const file = path.join(dir, 'openapi.json');
  await writeFile(file, JSON.stringify(doc));
  const bin = path.join(REPO_ROOT, 'node_modules/.bin/redocly');
  const { stdout, stderr } = await promisify(execFile)(bin, ['lint', file, '--config', path.join(REPO_ROOT, 'redocly.yaml'), '--format', 'stylish'], { env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } })
    .catch((err: { stdout: string; stderr: string }) => {
      assert.fail(`redocly lint failed:\n${err.stdout}\n${err.stderr}`);
    });
  assert.match(`${stdout}${stderr}`, /valid/i);
});

test('/docs serves Scalar\'s reference of /v1/openapi.json from the pinned package, under a policy that allows this origin alone (test/browser/docs.test.ts draws it)', async () => {
  const origin = BASE_URL.replace(/\/v1$/, '');
  const page = await fetch(`${origin}/docs`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type')!, /text\/html/);
  const csp = page.headers.get('content-security-policy')!;
  assert.match(csp, /script-src 'self';/);
  assert.match(csp, /connect-src 'self';/);
  const html = await page.text();
  assert.ok(html.includes(`<script src="${SCALAR_SCRIPT}">`), html);
  assert.doesNotMatch(html, /https?:\/\//, 'no other origin is named');
  const version = JSON.parse(await readFile(path.join(REPO_ROOT, 'api/scalar/node_modules/@scalar/api-reference/package.json'), 'utf8')).version;
  assert.equal(SCALAR_SCRIPT, `/docs/scalar-${version}.js`, 'the bundle of the installed, pinned version');
  assert.equal(JSON.parse(await readFile(path.join(REPO_ROOT, 'api/scalar/package.json'), 'utf8')).dependencies['@scalar/api-reference'], version, 'pinned exactly');
  const bundle = await fetch(`${origin}${SCALAR_SCRIPT}`);
  assert.equal(bundle.status, 200);
  assert.match(bundle.headers.get('content-type')!, /javascript/);
  assert.match(bundle.headers.get('cache-control')!, /immutable/);
  assert.ok(Number(bundle.headers.get('content-length')) > 1_000_000, 'the whole standalone bundle');
  await bundle.body?.cancel();
  const init = await (await fetch(`${origin}/docs/init.js`)).text();
  assert.match(init, /"url":"\/v1\/openapi.json"/);
  assert.match(init, /"proxyUrl":""/, 'try it calls this origin directly, never a proxy');
  const missing = await fetch(`${origin}/docs/nothing.js`);
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.code, 'route_not_found');
});

test('every built route that answers 404 for an id that names nothing documents its 404 in OpenAPI', async () => {
  const doc = (await call('GET', '/openapi.json', { key: null })).body;
  const built = ROUTES.filter((r) => TOOLS.get(r.tool)!.handler && r.tool !== 'file_upload');
  const answered404: string[] = [];
  const seen: Record<string, number> = {};
  // Valid references that name nothing (VALID's `x` is too short a lab name to be valid).
  const nothing: typeof VALID = {
    run_prepare: { body: { capability_ref: 'platform/no-such-lab@1.0.0', inputs: {} } },
    hub_inspect: { path: { reference: 'platform/no-such-lab@1.0.0' } },
  };
  for (const r of built) {
    const v = nothing[r.tool] ?? VALID[r.tool] ?? {};
    const url = fillPath(r.path, { ...PATH_ARGS, ...v.path }) + (v.query ? `?${v.query}` : '');
    const res = await call(r.method, url, { body: v.body ?? (r.method === 'GET' ? undefined : {}), headers: r.idempotency ? { 'Idempotency-Key': crypto.randomUUID() } : {} });
    seen[r.tool] = res.status;
    if (res.status !== 404) continue;
    answered404.push(r.tool);
    assert.ok(doc.paths[r.path][r.method.toLowerCase()].responses['404'], `${r.method} ${r.path} answered 404 (${errorOf(res).code}) but OpenAPI does not list it`);
  }
  for (const t of ['run_create', 'run_prepare', 'publish_execute', 'publish_prepare', 'workspace_change_apply', 'file_import_from_run', 'hub_inspect']) assert.ok(answered404.includes(t), `${t} was probed with ids that name nothing: ${JSON.stringify(seen)}`);
});

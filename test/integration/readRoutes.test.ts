import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorOf, closeTestDb, newAccount, testDb } from '../helpers.ts';
import { insertRelease } from '../../storage/db/releases.ts';
import { sha256Hex } from '../../storage/digest.ts';

after(closeTestDb);

/** A release row as publication will write it (fixture until built-in labs land). */
async function release(accountId: string, namespace: string, name: string, version: string, visibility: 'private' | 'public' = 'private') {
  return insertRelease(testDb(), {
    account_id: accountId, namespace, name, version, title: `${name} ${version}`, visibility,
    manifest: { schema_version: '2.0', title: name },
    inputs: [{ name: 'r0', value_type: 'number', required: true }, { name: 'days', value_type: 'integer', required: false }],
    outputs: [{ name: 'final_size', value_type: 'number' }],
    package_sha256: sha256Hex(`${namespace}/${name}@${version}`),
  });
}

test('GET /capabilities lists visible releases with contracts and digests, paginated by cursor', async () => {
  const owner = await newAccount();
  const ns = owner.account.namespace;
  for (const v of ['1.0.0', '1.2.0', '1.10.0']) await release(owner.account.id, ns, 'sir', v);
  const first = await call('GET', '/capabilities?limit=2', { key: owner.key });
  assert.equal(first.status, 200);
  assert.equal(first.body.request_id, first.headers.get('x-request-id'));
  assert.equal(first.body.schema_version, undefined, 'capability routes answer plain objects');
  const mine = (items: any[]) => items.filter((c) => c.ref.startsWith(`${ns}/`));
  // Walk every page: each but the last says has_more with a cursor; no item repeats.
  const all: any[] = [...first.body.items];
  let page = first.body;
  while (page.has_more) {
    assert.equal(page.items.length, 2);
    assert.ok(page.next_cursor);
    page = (await call('GET', `/capabilities?limit=2&cursor=${encodeURIComponent(page.next_cursor)}`, { key: owner.key })).body;
    all.push(...page.items);
  }
  assert.equal(page.next_cursor, null);
  assert.equal(new Set(all.map((c) => c.ref)).size, all.length, 'no item on two pages');
  assert.deepEqual(mine(all).map((c) => c.version).sort(), ['1.0.0', '1.10.0', '1.2.0']);
  const c = mine(all)[0];
  assert.deepEqual(Object.keys(c).sort(), ['inputs', 'name', 'outputs', 'package_sha256', 'ref', 'title', 'version']);
  assert.match(c.package_sha256, /^sha256:[0-9a-f]{64}$/);
  assert.deepEqual(c.inputs[0], { name: 'r0', value_type: 'number', required: true, description: null, units: null, default: null, schema: null }, 'a lab.yaml that declares nothing more: null');
  assert.deepEqual(c.outputs, [{ name: 'final_size', value_type: 'number' }]);
});

test('a capability gives each input its description, units, default and schema (bounds) as the lab.yaml declares them, as hub_inspect does', async () => {
  const owner = await newAccount();
  const ns = owner.account.namespace;
  const beta = { name: 'beta', maps_to: 'm.beta', value_type: 'number', required: false, description: 'Contact rate.', units: '1/day', default: 0.5, schema: { type: 'number', minimum: 0, maximum: 10 } };
  const flag = { name: 'verbose', maps_to: 'm.verbose', value_type: 'boolean', required: true, default: false };
  await insertRelease(testDb(), {
    account_id: owner.account.id, namespace: ns, name: 'declared', version: '1.0.0', title: 'Declared', visibility: 'private',
    manifest: { schema_version: '2.0', title: 'Declared', io: { inputs: [beta, flag], outputs: [{ name: 'y', maps_to: 'm.y', value_type: 'number' }] } },
    inputs: [{ name: 'beta', value_type: 'number', required: false }, { name: 'verbose', value_type: 'boolean', required: true }],
    outputs: [{ name: 'y', value_type: 'number' }],
    package_sha256: sha256Hex(`${ns}/declared@1.0.0`),
  });
  const got = await call('GET', `/capabilities/${ns}/declared`, { key: owner.key });
  assert.equal(got.status, 200, got.text);
  assert.deepEqual(got.body.inputs, [
    { name: 'beta', value_type: 'number', required: false, description: 'Contact rate.', units: '1/day', default: 0.5, schema: { type: 'number', minimum: 0, maximum: 10 } },
    { name: 'verbose', value_type: 'boolean', required: true, description: null, units: null, default: false, schema: null },
  ], 'a declared default of false is kept, not taken for absent');
  const listed = (await call('GET', '/capabilities?limit=100', { key: owner.key })).body.items.find((c: any) => c.ref === `${ns}/declared@1.0.0`);
  assert.deepEqual(listed.inputs, got.body.inputs, 'listed as got');
  const inspected = await call('GET', `/hub/releases/${encodeURIComponent(`${ns}/declared@1.0.0`)}`, { key: owner.key });
  assert.equal(inspected.status, 200, inspected.text);
  assert.deepEqual(inspected.body.contract.inputs, got.body.inputs, 'one view of an input in both');
});

test('GET /capabilities/{namespace}/{name} resolves the latest version by semver', async () => {
  const owner = await newAccount();
  const ns = owner.account.namespace;
  for (const v of ['1.2.0', '1.10.0', '1.9.3']) await release(owner.account.id, ns, 'growth', v);
  const res = await call('GET', `/capabilities/${ns}/growth`, { key: owner.key });
  assert.equal(res.status, 200);
  assert.equal(res.body.ref, `${ns}/growth@1.10.0`);
  assert.equal(res.body.version, '1.10.0');
});

test("another account's private release is answered exactly like a missing one", async () => {
  const owner = await newAccount();
  const other = await newAccount();
  const ns = owner.account.namespace;
  await release(owner.account.id, ns, 'secret', '1.0.0');
  await release(owner.account.id, ns, 'open', '1.0.0', 'public');
  const foreign = await call('GET', `/capabilities/${ns}/secret`, { key: other.key });
  const missing = await call('GET', `/capabilities/${ns}/no-such-lab`, { key: other.key });
  assert.equal(foreign.status, 404);
  assert.equal(errorOf(foreign).code, 'capability_not_found');
  const strip = (t: string) => t.replace(/[0-9a-f-]{36}/g, 'ID');
  assert.equal(strip(foreign.text), strip(missing.text), 'byte for byte, but for the request id');
  assert.deepEqual([...foreign.headers.keys()].sort(), [...missing.headers.keys()].sort());
  const list = await call('GET', '/capabilities?limit=100', { key: other.key });
  const refs = list.body.items.map((c: any) => c.ref);
  assert.ok(!refs.includes(`${ns}/secret@1.0.0`));
  assert.ok(refs.includes(`${ns}/open@1.0.0`), 'public releases are visible to everyone');
  assert.equal((await call('GET', `/capabilities/${ns}/open`, { key: other.key })).status, 200);
});

test('GET /compute-profiles lists priced profiles; a profile without a worker is unavailable', async () => {
  const res = await call('GET', '/compute-profiles');
  assert.equal(res.status, 200);
  // Profiles other test files inserted (test-*) stay once records use them: not ours to judge.
  const ids = res.body.items.map((p: any) => p.id).filter((id: string) => !id.startsWith('test-'));
  assert.deepEqual(ids, ['cpu-small', 'cpu-standard', 'gpu-h100']);
  const gpu = res.body.items.find((p: any) => p.id === 'gpu-h100');
  assert.equal(gpu.kind, 'gpu');
  assert.equal(gpu.availability, 'unavailable');
  for (const p of res.body.items) assert.ok(p.price_per_second_usd > 0 && p.max_runtime_seconds > 0);
});

test('skills are listed and served only after their checksum verifies', async () => {
  const list = await call('GET', '/skills');
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.items.map((s: any) => s.name), ['authoring-labs', 'naming', 'publishing-labs', 'running-simulations']);
  const res = await call('GET', '/skills/running-simulations');
  assert.equal(res.status, 200);
  assert.equal(res.body.verified, true);
  assert.equal(sha256Hex(res.body.content), res.body.sha256);
  assert.match(res.body.content, /# Running simulations/);
  const missingFile = await call('GET', '/skills/naming?path=OTHER.md');
  assert.equal(missingFile.status, 404);
  assert.equal(errorOf(missingFile).param, 'path');
  const missing = await call('GET', '/skills/no-such-skill');
  assert.equal(errorOf(missing).code, 'skill_not_found');
});

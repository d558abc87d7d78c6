import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorOf, closeTestDb, newAccount, BASE_URL, testDb, testObjects, until } from '../helpers.ts';

after(closeTestDb);

async function upload(key: string, name: string, text: string) {
  const form = new FormData();
  form.append('file', new Blob([text]), name);
  return (await (await fetch(`${BASE_URL}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form })).json()) as any;
}

function member(f: any, sample: string, group: string, split: string, role = 'image') {
  return { file_id: f.file_id, sha256: f.sha256, size_bytes: f.size_bytes, sample_id: sample, group_id: group, role, split };
}
/** A dataset version once its registration has ended. */
async function settled(key: string, id: string) {
  return until(60000, async () => {
    const d = (await call('GET', `/datasets/${id}`, { key })).body;
    return d.status === 'registering' ? undefined : d;
  });
}
const meta = { source: 'lab bench', license: 'CC-BY-4.0', attribution: 'The lab', annotation_version: 'v1' };

test('a clean manifest registers; one label changed makes a new version with a new digest; the old one stands', async () => {
  const { key } = await newAccount();
  const files = [await upload(key, 'a.txt', 'a'), await upload(key, 'b.txt', 'b'), await upload(key, 'c.txt', 'c')];
  const members = [member(files[0], 's1', 'g1', 'train'), member(files[1], 's2', 'g2', 'train'), member(files[2], 's3', 'g3', 'test')];
  const v1 = await call('POST', '/datasets', { key, body: { name: 'cells', ...meta, members } });
  assert.equal(v1.status, 201, v1.text);
  assert.equal(v1.body.status, 'registering', 'the route never waits for the registration');
  assert.deepEqual(v1.body.next_actions.map((a: any) => [a.tool, a.http.path]), [['dataset_get', `/v1/datasets/${v1.body.dataset_id}`]]);
  assert.equal((await settled(key, v1.body.dataset_id)).status, 'registered');
  assert.equal(v1.body.version, 1);
  assert.match(v1.body.manifest_sha256, /^[0-9a-f]{64}$/);
  const same = await call('POST', '/datasets', { key, body: { name: 'cells', ...meta, members: [...members].reverse() } });
  assert.equal(same.body.dataset_id, v1.body.dataset_id, 'the same manifest in another order is the same version');
  const relabelled = members.map((m, i) => (i === 2 ? { ...m, role: 'label' } : m));
  const v2 = await call('POST', '/datasets', { key, body: { name: 'cells', ...meta, members: relabelled } });
  assert.equal(v2.body.version, 2);
  assert.notEqual(v2.body.manifest_sha256, v1.body.manifest_sha256);
  const old = await call('GET', `/datasets/${v1.body.dataset_id}`, { key });
  assert.equal(old.body.manifest_sha256, v1.body.manifest_sha256);
  assert.equal(old.body.manifest.members.find((m: any) => m.sample_id === 's3').role, 'image');
  const list = await call('GET', '/datasets?limit=1&offset=1', { key });
  assert.deepEqual(list.body.items.map((d: any) => d.version), [1]);
  const other = await newAccount();
  assert.equal(errorOf(await call('GET', `/datasets/${v1.body.dataset_id}`, { key: other.key })).code, 'dataset_not_found');
});

test('each kind of split leakage is rejected with its offenders listed', async () => {
  const { key } = await newAccount();
  const [a, b] = [await upload(key, 'a.txt', 'x1'), await upload(key, 'b.txt', 'x2')];
  const cases: Array<[unknown[], string, string]> = [
    [[member(a, 's1', 'g1', 'train'), member(b, 's2', 'g1', 'test')], 'group_id', 'g1'],
    [[member(a, 's1', 'g1', 'train'), member(b, 's1', 'g2', 'validation')], 'sample_id', 's1'],
    [[member(a, 's1', 'g1', 'train'), member(a, 's2', 'g2', 'test')], 'sha256', a.sha256],
  ];
  for (const [members, kind, value] of cases) {
    const r = await call('POST', '/datasets', { key, body: { name: 'leaky', ...meta, members } });
    assert.equal(r.status, 422);
    assert.equal(errorOf(r).code, 'split_leakage');
    assert.ok((errorOf(r).details.offenders as any[]).some((o) => o.kind === kind && o.value === value && o.splits.length === 2), kind);
  }
  assert.deepEqual((await call('GET', '/datasets', { key })).body.items, []);
});

test("a member whose digest or size is not the stored file's is member_mismatch; nothing is registered", async () => {
  const { key } = await newAccount();
  const a = await upload(key, 'a.txt', 'abc');
  const wrongSize = await call('POST', '/datasets', { key, body: { name: 'bad', ...meta, members: [{ ...member(a, 's1', 'g1', 'train'), size_bytes: 99 }] } });
  assert.equal(errorOf(wrongSize).code, 'member_mismatch');
  const wrongSha = await call('POST', '/datasets', { key, body: { name: 'bad', ...meta, members: [{ ...member(a, 's1', 'g1', 'train'), sha256: 'c'.repeat(64) }] } });
  assert.equal(errorOf(wrongSha).code, 'member_mismatch');
  const foreign = await upload((await newAccount()).key, 'z.txt', 'z');
  const notMine = await call('POST', '/datasets', { key, body: { name: 'bad', ...meta, members: [member(foreign, 's1', 'g1', 'train')] } });
  assert.equal(errorOf(notMine).code, 'member_mismatch');
  assert.deepEqual((await call('GET', '/datasets', { key })).body.items, []);
});

test('a member whose stored bytes no longer match ends the version failed with the reason; an identical retry registers again once they do', async () => {
  const { key } = await newAccount();
  const a = await upload(key, 'a.txt', 'original bytes');
  const row = await testDb()('files').where({ id: a.file_id }).first();
  const original = await testObjects().getBytes(row.object_key);
  await testObjects().putObject(row.object_key, Buffer.from('altered in the store'));
  const body = { name: 'drifted', ...meta, members: [member(a, 's1', 'g1', 'train')] };
  const first = await call('POST', '/datasets', { key, body });
  assert.equal(first.status, 201, first.text);
  const failed = await settled(key, first.body.dataset_id);
  assert.equal(failed.status, 'failed');
  assert.match(JSON.stringify(failed.problems), /sha256 is [0-9a-f]{64}, not/);
  await testObjects().putObject(row.object_key, original);
  const again = await call('POST', '/datasets', { key, body });
  assert.notEqual(again.body.dataset_id, first.body.dataset_id, 'not the failed version handed back');
  assert.equal((await settled(key, again.body.dataset_id)).status, 'registered');
});

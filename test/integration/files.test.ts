import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { call, errorOf, closeTestDb, newAccount, testDb, testObjects, spawnApi, waitForRun, BASE_URL } from '../helpers.ts';
import { sha256Hex } from '../../storage/digest.ts';

after(closeTestDb);

async function upload(key: string, name: string, bytes: Buffer, base = BASE_URL) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), name);
  const res = await fetch(`${base}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  return { status: res.status, body: await res.json() as any };
}

async function uploadedObjects(): Promise<number> {
  const o = testObjects();
  const out = await o.client.send(new ListObjectsV2Command({ Bucket: o.bucket, Prefix: 'files/' }));
  return out.KeyCount ?? 0;
}

let key = '';
before(async () => {
  key = (await newAccount({ usd: 2 })).key;
});

test('an upload is streamed, hashed, sniffed, listed, and read back as metadata, bounded content, bytes and ranges', async () => {
  const csv = Buffer.from('t,population\n0,5\n1,7.97\n2,12.4\n');
  const up = await upload(key, 'growth.csv', csv);
  assert.equal(up.status, 200, JSON.stringify(up.body));
  assert.equal(up.body.sha256, sha256Hex(csv));
  assert.equal(up.body.size_bytes, csv.length);
  assert.equal(up.body.format, 'csv');
  const png = Buffer.concat([Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'), Buffer.alloc(64, 1)]);
  const img = await upload(key, 'cells.bin', png);
  assert.equal(img.body.format, 'png', 'sniffed from the bytes, not the name');
  const list = await call('GET', '/files', { key });
  assert.deepEqual(list.body.items.map((f: any) => f.file_id), [img.body.file_id, up.body.file_id], 'newest first');
  assert.deepEqual((await call('GET', '/files?format=csv', { key })).body.items.map((f: any) => f.name), ['growth.csv']);
  const got = await call('GET', `/files/${up.body.file_id}?include_content=true`, { key });
  assert.equal(got.body.content.data, csv.toString());
  assert.equal(got.body.content.truncated, false);
  assert.equal(got.body.warnings[0].code, 'untrusted_content');
  const raw = await fetch(`${BASE_URL}/files/${up.body.file_id}/content`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(raw.status, 200);
  assert.equal(raw.headers.get('etag'), `"${sha256Hex(csv)}"`);
  assert.deepEqual(Buffer.from(await raw.arrayBuffer()), csv);
  const part = await fetch(`${BASE_URL}/files/${up.body.file_id}/content`, { headers: { Authorization: `Bearer ${key}`, Range: 'bytes=2-11' } });
  assert.equal(part.status, 206);
  assert.equal(part.headers.get('content-range'), `bytes 2-11/${csv.length}`);
  assert.equal(Buffer.from(await part.arrayBuffer()).toString(), csv.subarray(2, 12).toString());
  const past = await fetch(`${BASE_URL}/files/${up.body.file_id}/content`, { headers: { Authorization: `Bearer ${key}`, Range: 'bytes=9999-' } });
  assert.equal(past.status, 416);
});

test('a large upload is bounded: past the limit 413 and nothing stored; a truncated body 400 and nothing stored', async () => {
  const small = await spawnApi({ SILICO_MAX_UPLOAD_BYTES: String(1024 * 1024) });
  try {
    const { key: k, account } = await newAccount();
    const objectsBefore = await uploadedObjects();
    const big = await upload(k, 'big.bin', Buffer.alloc(3 * 1024 * 1024, 7), small.base);
    assert.equal(big.status, 413);
    assert.equal(big.body.error.code, 'payload_too_large');
    const ok = await upload(k, 'fits.bin', Buffer.alloc(1024 * 1024 - 1, 7), small.base);
    assert.equal(ok.status, 200);
    const boundary = 'XyZ';
    const truncated = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="cut.txt"\r\nContent-Type: text/plain\r\n\r\nhalf of a fi`;
    const cut = await fetch(`${small.base}/files`, { method: 'POST', headers: { Authorization: `Bearer ${k}`, 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body: truncated });
    assert.equal(cut.status, 400);
    assert.equal(((await cut.json()) as any).error.param, 'file');
    const rows = await testDb()('files').where({ account_id: account.id });
    assert.deepEqual(rows.map((r) => r.name), ['fits.bin'], 'only the upload that fit was recorded');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await uploadedObjects(), objectsBefore + 1, 'only the upload that fit left an object; no partial upload remains');
    const none = await call('POST', '/files', { key: k, base: small.base, rawBody: 'x', headers: { 'Content-Type': 'text/plain' } });
    assert.equal(errorOf(none).code, 'unsupported_media_type');
  } finally {
    await small.stop();
  }
});

test('from-run copies verified artifact bytes once, keeping the run origin; a wrong digest copies nothing', async () => {
  const res = await call('POST', '/runs', { key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth', inputs: {}, max_runtime_seconds: 60 } });
  const run = await waitForRun(key, res.body.id);
  const art = (await call('GET', `/runs/${run.id}/results`, { key })).body.artifacts.find((a: any) => a.file_name === 'biomass.csv');
  const before = await call('GET', '/files?limit=100', { key });
  const wrong = await call('POST', '/files/from-run', { key, body: { run_id: run.id, artifact_id: art.id, expected_sha256: 'b'.repeat(64) } });
  assert.equal(errorOf(wrong).code, 'checksum_mismatch');
  assert.equal((await call('GET', '/files?limit=100', { key })).body.items.length, before.body.items.length, 'nothing stored');
  const copy = await call('POST', '/files/from-run', { key, body: { run_id: run.id, artifact_id: art.id, expected_sha256: art.sha256 } });
  assert.equal(copy.status, 201, copy.text);
  const file = copy.body.items[0];
  assert.equal(file.sha256, art.sha256);
  assert.equal(file.origin.run_id, run.id);
  assert.equal(file.format, 'csv');
  const again = await call('POST', '/files/from-run', { key, body: { run_id: run.id, artifact_id: art.id, expected_sha256: art.sha256 } });
  assert.equal(again.body.items[0].file_id, file.file_id, 'a retry returns the same file');
  const other = await newAccount();
  assert.equal(errorOf(await call('GET', `/files/${file.file_id}`, { key: other.key })).code, 'file_not_found');
  assert.equal(errorOf(await call('POST', '/files/from-run', { key: other.key, body: { run_id: run.id, artifact_id: art.id, expected_sha256: art.sha256 } })).code, 'run_not_found');
});

import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { paginateListObjectsV2 } from '@aws-sdk/client-s3';
import { call, errorOf, closeTestDb, newAccount, testDb, testObjects, spawnApi, waitForRun, BASE_URL } from '../helpers.ts';
import { sha256Hex } from '../../storage/digest.ts';
import http from 'node:http';
import yazl from 'yazl';
import { newId } from '../../storage/ids.ts';
import { setFeature } from '../../storage/db/accounts.ts';
import { loadConfig } from '../../kernel/config.ts';

after(closeTestDb);

async function upload(key: string, name: string, bytes: Buffer, base = BASE_URL) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), name);
  const res = await fetch(`${base}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  return { status: res.status, body: await res.json() as any };
}

/** Every uploaded file's object in the store (other files of the suite upload meanwhile too). */
async function uploadedObjects(): Promise<Set<string>> {
  const o = testObjects();
  const keys = new Set<string>();
  for await (const page of paginateListObjectsV2({ client: o.client }, { Bucket: o.bucket, Prefix: 'files/' })) {
    for (const c of page.Contents ?? []) keys.add(c.Key!);
  }
  return keys;
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
  // A name a header cannot carry as is (CJK, emoji) goes out as RFC 6266's filename*: no 500.
  const named = await upload(key, '細胞😀.csv', csv);
  const bytes = await fetch(`${BASE_URL}/files/${named.body.file_id}/content`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(bytes.status, 200);
  assert.equal(bytes.headers.get('content-disposition'), `attachment; filename="????.csv"; filename*=UTF-8''${encodeURIComponent('細胞😀')}.csv`);
  assert.equal(named.body.name, '細胞😀.csv', 'a raw UTF-8 file name, as browsers and fetch send it, is read as UTF-8');
  await testDb()('files').where({ id: named.body.file_id }).delete();
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
  // ?redirect=1: a 307 to a presigned URL of the object store, which serves the same bytes to anyone holding it, with the file's name.
  const redirected = await fetch(`${BASE_URL}/files/${up.body.file_id}/content?redirect=1`, { headers: { Authorization: `Bearer ${key}` }, redirect: 'manual' });
  assert.equal(redirected.status, 307);
  const store = await fetch(redirected.headers.get('location')!);
  assert.equal(store.status, 200);
  assert.deepEqual(Buffer.from(await store.arrayBuffer()), csv);
  assert.match(store.headers.get('content-disposition') ?? '', /^attachment; filename\*=UTF-8''/);
  const tampered = new URL(redirected.headers.get('location')!);
  tampered.searchParams.set('X-Amz-Expires', '604800');
  assert.equal((await fetch(tampered)).status, 403, 'the signature covers its expiry');
  const other = await newAccount();
  assert.equal((await fetch(`${BASE_URL}/files/${up.body.file_id}/content?redirect=1`, { headers: { Authorization: `Bearer ${other.key}` }, redirect: 'manual' })).status, 404, 'another account\'s file: no URL');
});

test('a large upload is bounded: past the limit 413 and nothing stored; a truncated body 400 and a name holding U+0000 422, nothing stored', async () => {
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
    // An RFC 5987 name decodes to U+0000, which the files table cannot hold: 422, nothing stored.
    const nul = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''a%00b.txt\r\nContent-Type: text/plain\r\n\r\nhello\r\n--${boundary}--\r\n`;
    const named = await fetch(`${small.base}/files`, { method: 'POST', headers: { Authorization: `Bearer ${k}`, 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body: nul });
    assert.equal(named.status, 422);
    assert.deepEqual(((await named.json()) as any).error.code, 'parameter_invalid_format');
    const rows = await testDb()('files').where({ account_id: account.id });
    assert.deepEqual(rows.map((r) => r.name), ['fits.bin'], 'only the upload that fit was recorded');
    await new Promise((r) => setTimeout(r, 300));
    // The objects that appeared meanwhile: each recorded (this account's, or another test's
    // upload), and of this account's only the one that fit; none left by a cut upload.
    const added = [...await uploadedObjects()].filter((k) => !objectsBefore.has(k));
    const recorded = await testDb()('files').whereIn('object_key', added).select('object_key', 'account_id');
    assert.deepEqual(added.filter((k) => !recorded.some((r) => r.object_key === k)), [], 'no partial upload remains');
    assert.deepEqual(recorded.filter((r) => r.account_id === account.id).map((r) => r.object_key), [rows[0].object_key], 'only the upload that fit left an object');
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
  const wrongAfter = await call('POST', '/files/from-run', { key, body: { run_id: run.id, artifact_id: art.id, expected_sha256: 'd'.repeat(64) } });
  assert.equal(errorOf(wrongAfter).code, 'checksum_mismatch', 'an earlier copy is never handed back against the wrong digest');
  const other = await newAccount();
  assert.equal(errorOf(await call('GET', `/files/${file.file_id}`, { key: other.key })).code, 'file_not_found');
  assert.equal(errorOf(await call('POST', '/files/from-run', { key: other.key, body: { run_id: run.id, artifact_id: art.id, expected_sha256: art.sha256 } })).code, 'run_not_found');
});

/** A ZIP archive (yazl) of the given members. */
async function zipOf(members: Record<string, Buffer>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, data] of Object.entries(members)) zip.addBuffer(data, name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Adds a ZIP artifact to an owned run, the way the execution activity records one. */
async function zipArtifact(runId: string, bytes: Buffer, fileName: string) {
  const sha = await testObjects().putBlob(bytes, 'application/zip');
  const id = newId('art');
  await testDb()('run_artifacts').insert({ id, run_id: runId, role: 'bundle', file_name: fileName, content_type: 'application/zip', format: 'zip', size_bytes: bytes.length, sha256: sha, public: true });
  return { id, sha256: sha };
}

test('from-run with members copies verified files out of a ZIP artifact, only with zip_member_import', async () => {
  const owner = await newAccount({ usd: 2 });
  const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth', inputs: {}, max_runtime_seconds: 60 } });
  const run = await waitForRun(owner.key, res.body.id);
  const a = Buffer.from('t,x\n0,1\n1,2\n');
  const b = Buffer.from(JSON.stringify({ ok: true }));
  const art = await zipArtifact(run.id, await zipOf({ 'tables/a.csv': a, 'b.json': b, 'c.txt': Buffer.from('not asked for') }), 'bundle.zip');
  const body = { run_id: run.id, artifact_id: art.id, expected_sha256: art.sha256, members: ['tables/a.csv', 'b.json'] };

  const off = await call('POST', '/files/from-run', { key: owner.key, body });
  assert.equal(off.status, 403);
  assert.equal(errorOf(off).code, 'feature_not_enabled');
  await setFeature(testDb(), owner.account.id, 'zip_member_import', true);
  await new Promise((r) => setTimeout(r, 300)); // the key cache hears the change by NOTIFY

  const before = (await call('GET', '/files?limit=100', { key: owner.key })).body.items.length;
  const missing = await call('POST', '/files/from-run', { key: owner.key, body: { ...body, members: ['b.json', 'nope.csv'] } });
  assert.equal(errorOf(missing).code, 'archive_member_not_found');
  assert.deepEqual(missing.body.error.details.members, ['nope.csv']);
  assert.equal((await call('GET', '/files?limit=100', { key: owner.key })).body.items.length, before, 'one missing member: nothing stored');
  const wrong = await call('POST', '/files/from-run', { key: owner.key, body: { ...body, expected_sha256: 'c'.repeat(64) } });
  assert.equal(errorOf(wrong).code, 'checksum_mismatch');

  const copied = await call('POST', '/files/from-run', { key: owner.key, body });
  assert.equal(copied.status, 201, copied.text);
  const [fa, fb] = copied.body.items;
  assert.equal(fa.sha256, sha256Hex(a));
  assert.equal(fa.name, 'a.csv');
  assert.equal(fa.format, 'csv');
  assert.equal(fb.sha256, sha256Hex(b));
  assert.deepEqual({ kind: fa.origin.kind, member: fa.origin.member, archive: fa.origin.archive_sha256 }, { kind: 'run_artifact_member', member: 'tables/a.csv', archive: art.sha256 });
  const bytes = await fetch(`${BASE_URL}/files/${fa.file_id}/content`, { headers: { Authorization: `Bearer ${owner.key}` } });
  assert.deepEqual(Buffer.from(await bytes.arrayBuffer()), a);
  const again = await call('POST', '/files/from-run', { key: owner.key, body });
  assert.deepEqual(again.body.items.map((f: any) => f.file_id), [fa.file_id, fb.file_id], 'a retry returns the same files');

  // A member whose bytes no longer match its CRC-32 stops the whole batch before any store.
  const good = await zipOf({ 'x.csv': Buffer.from('a,b\n1,2\n'.repeat(50)), 'y.csv': Buffer.from('c\n3\n') });
  const bad = Buffer.from(good);
  bad[40] = bad[40]! ^ 0xff; // inside x.csv's compressed data
  const corrupt = await zipArtifact(run.id, bad, 'corrupt.zip');
  const refused = await call('POST', '/files/from-run', { key: owner.key, body: { run_id: run.id, artifact_id: corrupt.id, expected_sha256: corrupt.sha256, members: ['y.csv', 'x.csv'] } });
  assert.equal(errorOf(refused).code, 'archive_member_corrupt');
  const notZip = await call('POST', '/files/from-run', { key: owner.key, body: { run_id: run.id, artifact_id: (await zipArtifact(run.id, Buffer.from('plain text'), 'n.zip')).id, expected_sha256: sha256Hex(Buffer.from('plain text')), members: ['a'] } });
  assert.equal(errorOf(notZip).code, 'not_an_archive');
  assert.equal(notZip.body.error.param, 'artifact_id');
  assert.equal((await call('GET', '/files?limit=100', { key: owner.key })).body.items.length, before + 2);
});

test('a storage failure part way through a ZIP import keeps the copied files, lists them, and a retry finishes', async () => {
  const owner = await newAccount({ usd: 2 });
  await setFeature(testDb(), owner.account.id, 'zip_member_import', true);
  const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth', inputs: {}, max_runtime_seconds: 60 } });
  const run = await waitForRun(owner.key, res.body.id);
  const parts = { 'one.txt': Buffer.from(`first ${crypto.randomUUID()}`), 'two.txt': Buffer.from(`second ${crypto.randomUUID()}`) };
  const art = await zipArtifact(run.id, await zipOf(parts), 'two.zip');
  // An S3 endpoint that refuses the upload of the second member: a proxy in front of MinIO.
  const secondKey = `blobs/${sha256Hex(parts['two.txt'])}`;
  const upstream = new URL(loadConfig().s3.endpoint);
  let failing = true;
  const proxy = http.createServer((req, resp) => {
    if (failing && req.method === 'PUT' && req.url?.includes(secondKey.split('/').pop()!)) {
      req.resume();
      resp.writeHead(503, { 'Content-Type': 'application/xml' }).end('<Error><Code>ServiceUnavailable</Code></Error>');
      return;
    }
    const out = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      resp.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(resp);
    });
    req.pipe(out);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const replica = await spawnApi({ S3_ENDPOINT: `http://127.0.0.1:${(proxy.address() as { port: number }).port}` });
  try {
    const body = { run_id: run.id, artifact_id: art.id, expected_sha256: art.sha256, members: ['one.txt', 'two.txt'] };
    const failed = await call('POST', '/files/from-run', { key: owner.key, body, base: replica.base });
    assert.equal(failed.status, 503, failed.text);
    const e = errorOf(failed);
    assert.equal(e.code, 'storage_unavailable');
    assert.equal((e.details.completed_files as any[]).length, 1);
    const kept = (e.details.completed_files as any[])[0];
    assert.equal(kept.sha256, sha256Hex(parts['one.txt']));
    assert.equal((await call('GET', `/files/${kept.file_id}`, { key: owner.key })).status, 200, 'the completed file is kept');
    failing = false;
    const retried = await call('POST', '/files/from-run', { key: owner.key, body, base: replica.base });
    assert.equal(retried.status, 201, retried.text);
    assert.equal(retried.body.items[0].file_id, kept.file_id, 'the retry reuses the completed file');
    assert.equal(retried.body.items[1].sha256, sha256Hex(parts['two.txt']));
  } finally {
    await replica.stop();
    proxy.close();
  }
});

test('downloads whose clients go away mid-stream leave the api serving (an aborted object-store body once ended the process)', { timeout: 120_000 }, async () => {
  // An api of its own: if this failed, it would take only this replica down.
  const replica = await spawnApi();
  try {
    const bytes = Buffer.alloc(8 << 20, 7);
    const up = await upload(key, 'large.bin', bytes, replica.base);
    assert.equal(up.status, 200);
    const url = new URL(`${replica.base}/files/${up.body.file_id}/content`);
    // Gone at each moment of a download: at its headers, at its first bytes, part way.
    const abort = (after: 'headers' | 'data' | number) => new Promise<void>((resolve, reject) => {
      const req = http.get(url, { headers: { Authorization: `Bearer ${key}` } }, (res) => {
        if (after === 'headers') return void (req.destroy(), resolve());
        let seen = 0;
        res.on('data', (c: Buffer) => {
          seen += c.length;
          if (after === 'data' || seen >= after) {
            req.destroy();
            resolve();
          }
        });
      });
      req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(err)));
    });
    for (let round = 0; round < 5; round++) await Promise.all(['headers', 'data', 1 << 20, 4 << 20].flatMap((a) => [abort(a as never), abort(a as never)]));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(replica.proc.exitCode, null, 'the api is still running');
    const whole = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(sha256Hex(Buffer.from(await whole.arrayBuffer())), sha256Hex(bytes));
  } finally {
    await replica.stop();
  }
});

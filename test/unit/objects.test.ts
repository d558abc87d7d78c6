import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { createObjectStore } from '../../storage/objects.ts';

/** What the store's S3 client puts on the wire, seen by a plain HTTP server standing in for S3's front door. */
async function capture(act: (store: ReturnType<typeof createObjectStore>) => Promise<unknown>): Promise<Array<{ method: string; url: string; headers: IncomingHttpHeaders }>> {
  const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET') {
        res.writeHead(200, { 'Content-Length': '2', ETag: '"x"' }).end('ok');
      } else if (req.method === 'POST' && req.url!.includes('uploads')) {
        res.writeHead(200, { 'Content-Type': 'application/xml' }).end('<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>');
      } else if (req.method === 'POST') {
        res.writeHead(200, { 'Content-Type': 'application/xml' }).end('<CompleteMultipartUploadResult><ETag>"x"</ETag></CompleteMultipartUploadResult>');
      } else {
        res.writeHead(200, { ETag: '"x"' }).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const store = createObjectStore({ endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, region: 'us-east-1', accessKeyId: 'a', secretAccessKey: 'b', bucket: 'bkt' });
    await act(store);
  } finally {
    server.close();
  }
  return seen;
}

test('bodies are sent as UNSIGNED-PAYLOAD (we hash every byte ourselves); other requests keep their signed payload hash', async () => {
  const seen = await capture(async (store) => {
    await store.putObject('k', Buffer.from('hello'));
    // Two parts of a streamed upload: each UploadPart is a body the SDK would otherwise hash again.
    await store.putStream('s', Readable.from([Buffer.alloc(6 * 1024 * 1024, 1)]), 'application/octet-stream');
    await store.getBytes('k');
  });
  const bodies = seen.filter((r) => r.method === 'PUT');
  assert.equal(bodies.length, 3, 'one PutObject and two UploadParts');
  for (const r of bodies) assert.equal(r.headers['x-amz-content-sha256'], 'UNSIGNED-PAYLOAD', `${r.method} ${r.url}`);
  for (const r of bodies) assert.match(String(r.headers.authorization), /SignedHeaders=[^,]*x-amz-content-sha256/, 'the marker itself is signed');
  const get = seen.find((r) => r.method === 'GET')!;
  assert.equal(get.headers['x-amz-content-sha256'], 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'an empty body keeps its real hash');
});

import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { plainIndexOrigin, startIndexProxy, type IndexProxy } from '../../activities/environments/indexProxy.ts';

// The build's proxy for an index served over plain HTTP (an operator's mirror, a test's
// local index): reads of that origin are forwarded, anything else refused and recorded.

let index: Server;
let origin = '';
let proxy: IndexProxy;
let dir = '';
before(async () => {
  index = createServer((req, res) => {
    res.setHeader('Content-Type', 'application/vnd.pypi.simple.v1+json');
    res.end(JSON.stringify({ path: req.url, host: req.headers.host, proxyHeader: req.headers['proxy-connection'] ?? null }));
  });
  await new Promise<void>((r) => index.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(index.address() as { port: number }).port}`;
  dir = await mkdtemp(path.join(tmpdir(), 'silico-proxy-test-'));
  proxy = await startIndexProxy(path.join(dir, 'proxy.sock'), ['pypi.org'], plainIndexOrigin(`${origin}/simple`));
});
after(async () => {
  await proxy.close();
  index.close();
  await rm(dir, { recursive: true, force: true });
});

/** A request through the proxy's socket in absolute form, as uv sends it to an HTTP proxy. */
function viaProxy(method: string, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: path.join(dir, 'proxy.sock'), method, path: url, headers: { Host: new URL(url).host, 'Proxy-Connection': 'keep-alive' } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('plainIndexOrigin: an http index has its origin, an https one none', () => {
  assert.equal(plainIndexOrigin('http://10.0.0.5:3141/root/pypi/+simple/'), 'http://10.0.0.5:3141');
  assert.equal(plainIndexOrigin('https://pypi.org/simple'), null);
});

test('a read of the plain index is forwarded with its own Host and without the proxy\'s headers', async () => {
  const page = await viaProxy('GET', `${origin}/simple/six/`);
  assert.equal(page.status, 200);
  assert.deepEqual(JSON.parse(page.body), { path: '/simple/six/', host: new URL(origin).host, proxyHeader: null });
  assert.equal((await viaProxy('HEAD', `${origin}/files/six.whl`)).status, 200);
  assert.deepEqual(proxy.refused, []);
});

test('a write to the index, another origin, or another port of its host is refused and recorded', async () => {
  const port = Number(new URL(origin).port);
  const elsewhere = [
    ['POST', `${origin}/simple/six/`],
    ['GET', `http://127.0.0.1:${port + 1}/simple/six/`],
    ['GET', 'http://example.com/'],
  ] as const;
  for (const [method, url] of elsewhere) assert.equal((await viaProxy(method, url)).status, 403, `${method} ${url}`);
  assert.deepEqual(proxy.refused, elsewhere.map(([m, u]) => `${m} ${u}`));
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSourceHttp, retryAfterMs, SourceError } from '../../activities/biology/sourceHttp.ts';
import type { BiologySource } from '../../kernel/config.ts';

// The one door to biology sources, against a local server: what it refuses before any
// byte leaves (unregistered hosts, private addresses after resolution), and how it reads
// what comes back (redirects, sizes, statuses).

let server: http.Server;
let base = '';
const hits: string[] = [];

before(async () => {
  server = http.createServer((req, res) => {
    hits.push(req.url!);
    if (req.url === '/big') {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 65);
      for (let i = 0; i < 32; i++) res.write(chunk);
      res.end();
    } else if (req.url === '/away') res.writeHead(302, { location: 'http://example.invalid/x' }).end();
    else if (req.url === '/hop') res.writeHead(301, { location: '/json' }).end();
    else if (req.url === '/busy') res.writeHead(429, { 'retry-after': '2' }).end();
    else if (req.url === '/down') res.writeHead(503).end();
    else if (req.url === '/gone') res.writeHead(404).end();
    else if (req.url === '/empty') res.writeHead(204).end();
    else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((r) => server.close(() => r())));

const source = (urls: Record<string, string>, extra: Partial<BiologySource> = {}): BiologySource =>
  ({ id: 'uniprot', title: 'test', urls, timeoutMs: 2000, maxRecordBytes: 1024 * 1024, requestsPerSecond: 100, ...extra });

async function refusal(p: Promise<unknown>): Promise<SourceError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof SourceError, String(err));
    return err;
  }
  assert.fail('expected a SourceError');
}

test('private and loopback addresses are refused unless the configuration allows them, literal or resolved', async () => {
  const n = hits.length;
  const literal = createSourceHttp(source({ rest: base }), { allowPrivateAddresses: false });
  assert.equal((await refusal(literal.json(`${base}/json`))).code, 'source_address_refused');
  const port = new URL(base).port;
  const named = createSourceHttp(source({ rest: `http://localhost:${port}` }), { allowPrivateAddresses: false });
  assert.equal((await refusal(named.json(`http://localhost:${port}/json`))).code, 'source_address_refused', 'checked after DNS resolution');
  assert.equal(hits.length, n, 'nothing reached the server');
  const allowed = createSourceHttp(source({ rest: base }), { allowPrivateAddresses: true });
  assert.deepEqual(await allowed.json(`${base}/json`), { ok: true });
  await Promise.all([literal.close(), named.close(), allowed.close()]);
});

test('only registered hosts: another host, or a redirect to one, is refused; a redirect within is followed', async () => {
  const h = createSourceHttp(source({ rest: base }), { allowPrivateAddresses: true });
  assert.equal((await refusal(h.json('http://example.invalid/x'))).code, 'source_host_not_registered');
  assert.equal((await refusal(h.json(`${base}/away`))).code, 'source_redirect_refused');
  assert.deepEqual(await h.json(`${base}/hop`), { ok: true });
  await h.close();
});

test('statuses: 404 not found, 429 with its Retry-After and 5xx retryable, a body over the bound refused while it streams', async () => {
  const h = createSourceHttp(source({ rest: base }), { allowPrivateAddresses: true });
  const busy = await refusal(h.json(`${base}/busy`));
  assert.deepEqual([busy.code, busy.retryable, busy.retryAfterMs], ['source_rate_limited', true, 2000]);
  const down = await refusal(h.json(`${base}/down`));
  assert.deepEqual([down.code, down.retryable], ['source_unavailable', true]);
  assert.equal((await refusal(h.json(`${base}/gone`))).code, 'record_not_found');
  assert.equal(await h.json(`${base}/empty`), null);
  const big = await refusal(h.json(`${base}/big`, undefined, 1024 * 1024));
  assert.equal(big.code, 'record_too_large');
  await h.close();
});

test('Retry-After in seconds or as an HTTP date', () => {
  assert.equal(retryAfterMs('3'), 3000);
  const now = Date.parse('2026-11-24T12:00:00Z');
  assert.equal(retryAfterMs('Tue, 24 Nov 2026 12:00:05 GMT', now), 5000);
  assert.equal(retryAfterMs('soon'), undefined);
  assert.equal(retryAfterMs(undefined), undefined);
});

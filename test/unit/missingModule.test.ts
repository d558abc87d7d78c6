import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { askIndex, teachMissingModule } from '../../activities/execution/missingModule.ts';

// What a run's missing-module finding says of the package index is what the index said:
// its newest final release, that it has no such distribution, or that it could not be
// asked (unreachable, an error, no answer in time). A silent index never means "none".

const server: Server = createServer((req, res) => {
  if (req.url === '/six/') {
    res.setHeader('Content-Type', 'application/vnd.pypi.simple.v1+json');
    return res.end(JSON.stringify({ name: 'six', versions: ['1.16.0', '1.17.0', '2.0.0rc1'], files: [] }));
  }
  if (req.url === '/broken/') {
    res.statusCode = 503;
    return res.end('down for maintenance');
  }
  if (req.url === '/slow/') return setTimeout(() => res.end('{}'), 2000);
  res.statusCode = 404;
  res.end('not found');
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const index = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
after(() => server.close());

test('the index is asked once and its answer reported as it was: a release, none, or nothing it could say', async () => {
  assert.deepEqual(await askIndex(index, 'six'), { seen: 'release', name: 'six', version: '1.17.0' }, 'the newest final release');
  assert.deepEqual(await askIndex(index, 'nosuch.sub'), { seen: 'none' });
  assert.deepEqual(await askIndex(index, 'broken'), { seen: 'unreachable', why: 'it answered 503' });
  assert.deepEqual(await askIndex(index, 'slow', 200), { seen: 'unreachable', why: 'it did not answer within 0.2 s' });
  const closed = await askIndex('http://127.0.0.1:1/', 'six');
  assert.equal(closed.seen, 'unreachable');
  assert.match((closed as { why: string }).why, /^it could not be reached/);
});

test('a missing module\'s finding never says the index has no such distribution when the index could not be asked', async () => {
  const lab = { models: [{ dir: 'models/core', manifest: { runtime: { dependencies: { packages: ['tellurium==2.2.11.2'] } } } }] } as never;
  const missing = { module: 'broken', imported_by: { module: 'tellurium.x', file: '/lab/models/core/src/m.py', line: 1, distribution: 'tellurium', version: '2.2.11.2' } };
  const unreachable = await teachMissingModule('No module named broken\nTraceback', missing, lab, index);
  assert.match(unreachable, /The package index could not be asked which distribution provides broken \(it answered 503\)/);
  assert.doesNotMatch(unreachable, /has no distribution/);
  const none = await teachMissingModule('No module named nosuch\nTraceback', { ...missing, module: 'nosuch' }, lab, index);
  assert.match(none, /The package index has no distribution named nosuch: add the one that provides it to runtime\.dependencies\.packages in models\/core\/model\.yaml\./);
  const found = await teachMissingModule('No module named six\nTraceback', { ...missing, module: 'six' }, lab, index);
  assert.match(found, /has the distribution six \(newest 1\.17\.0\): add "six==1\.17\.0"/);
});

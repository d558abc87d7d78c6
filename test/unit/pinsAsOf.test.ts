import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { datePins, exactPins, PIN_GRACE_DAYS } from '../../api/runs/pinsAsOf.ts';
import { fileVersion, releaseUploadedAt } from '../../storage/packageIndex.ts';

// A lab that pins exactly is dated by its pins: the newest upload among them (a release's
// earliest file), plus the grace, as the index's JSON simple API reports each upload.

const pages: Record<string, unknown> = {
  tellurium: { name: 'tellurium', versions: ['2.2.11.1', '2.2.11.2'], files: [
    { filename: 'tellurium-2.2.11.1-py3-none-any.whl', 'upload-time': '2025-06-12T22:03:37.620705Z' },
    // A wheel added later for the same release does not move its date.
    { filename: 'tellurium-2.2.11.2-py3-none-any.whl', 'upload-time': '2026-03-01T00:00:00Z' },
    { filename: 'tellurium-2.2.11.2.tar.gz', 'upload-time': '2025-12-05T00:04:37.226021Z' },
  ] },
  'python-dateutil': { name: 'python-dateutil', versions: ['2.8.2', '2.9.0.post0'], files: [
    { filename: 'python-dateutil-2.8.2.tar.gz', 'upload-time': '2021-07-08T19:28:47Z' },
    { filename: 'python_dateutil-2.9.0.post0-py2.py3-none-any.whl', 'upload-time': '2024-03-01T18:36:18Z' },
  ] },
  undated: { name: 'undated', versions: ['1.0'], files: [{ filename: 'undated-1.0-py3-none-any.whl' }] },
  fresh: { name: 'fresh', versions: ['1.0'], files: [{ filename: 'fresh-1.0-py3-none-any.whl', 'upload-time': new Date(Date.now() - 5 * 86_400_000).toISOString() }] },
};
const server: Server = createServer((req, res) => {
  const name = /^\/([^/]+)\/$/.exec(req.url ?? '')?.[1];
  if (name === 'down') {
    res.statusCode = 503;
    return res.end('down');
  }
  if (!name || !pages[name]) {
    res.statusCode = 404;
    return res.end('not found');
  }
  res.setHeader('Content-Type', 'application/vnd.pypi.simple.v1+json');
  res.end(JSON.stringify(pages[name]));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const index = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
after(() => server.close());

test('exact pins are single == specifiers without a wildcard, by their canonical names, but the exempt', () => {
  assert.deepEqual(exactPins(['Tellurium==2.2.11.2', 'numpy', 'scipy>=1.10', 'six==1.*', 'a==1,<2', 'pyyaml==6.0.2', 'biosimulant==0.0.40', 'not a requirement',
    'numpy==latest', 'foo==1.0_1', 'old==1.0; python_version < "3.8"'], ['biosimulant']),
    [{ name: 'tellurium', version: '2.2.11.2' }, { name: 'pyyaml', version: '6.0.2' }]);
});

test('a file\'s version comes from its name: a wheel\'s second field, an sdist\'s stem after its last hyphen', () => {
  assert.equal(fileVersion('python_dateutil-2.9.0.post0-py2.py3-none-any.whl'), '2.9.0.post0');
  assert.equal(fileVersion('python-dateutil-2.8.2.tar.gz'), '2.8.2');
  assert.equal(fileVersion('pkg-1.0.zip'), '1.0');
  assert.equal(fileVersion('README'), undefined);
  const page = { name: 'x', versions: [], files: [{ filename: 'x-1.0-py3-none-any.whl', uploadTime: '2024-02-01T00:00:00Z' }, { filename: 'x-1.0.0.tar.gz', uploadTime: '2024-01-01T00:00:00Z' }] };
  assert.equal(releaseUploadedAt(page, '1.0'), '2024-01-01T00:00:00.000Z', 'the earliest file of the release, 1.0.0 being 1.0');
  assert.equal(releaseUploadedAt(page, '2.0'), undefined);
  assert.equal(releaseUploadedAt({ ...page, files: [{ filename: 'x-1.0-py3-none-any.whl', uploadTime: 'yesterday' }] }, '1.0'), undefined, 'a time it cannot read is none');
  assert.equal(releaseUploadedAt(page, 'latest'), undefined);
});

test('the pins date the lab: the newest release among them plus the grace; or undated, saying why', async () => {
  const now = new Date('2026-12-06T12:00:00Z');
  assert.equal(PIN_GRACE_DAYS, 30);
  assert.deepEqual(await datePins(index, [{ name: 'tellurium', version: '2.2.11.2' }, { name: 'python-dateutil', version: '2.8.2' }], now),
    { day: '2026-01-04', pin: 'tellurium==2.2.11.2', uploaded: '2025-12-05' });
  assert.deepEqual(await datePins(index, [{ name: 'undated', version: '1.0' }], now), { undated: 'the package index gives no upload time for undated==1.0' });
  assert.deepEqual(await datePins(index, [{ name: 'nosuch', version: '1.0' }], now), { undated: 'the package index has no project named nosuch' });
  assert.deepEqual(await datePins(index, [{ name: 'tellurium', version: '2.2.11.2' }, { name: 'down', version: '1.0' }], now),
    { undated: 'the package index could not be asked when down==1.0 was uploaded: it answered 503', unreachable: true });
  const fresh = await datePins(index, [{ name: 'fresh', version: '1.0' }]);
  assert.match((fresh as { undated: string }).undated, /^its newest exact pin, fresh==1\.0, was uploaded \d{4}-\d{2}-\d{2}, less than 30 days before today$/);
});

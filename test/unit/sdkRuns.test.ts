import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { IntegrityError, RunFailed, Silico, type RunEvent } from '../../sdk/src/index.ts';

// Run handles against a scripted fetch keyed by route, so polling, following and
// downloading are checked without a server.
type Route = (url: URL) => Response | undefined;

function client(routes: Route[]) {
  const seen: string[] = [];
  const fetch = async (input: string | URL | Request) => {
    const url = new URL(String(input));
    seen.push(url.pathname + url.search);
    for (const r of routes) {
      const res = r(url);
      if (res) return res;
    }
    return new Response(JSON.stringify({ error: { type: 'not_found_error', code: 'route_not_found', message: 'no', param: null, details: {}, request_id: 'x' } }), { status: 404 });
  };
  return { c: new Silico({ apiKey: 'k', baseUrl: 'http://api.test/v1', fetch: fetch as typeof globalThis.fetch }), seen };
}
const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { 'Content-Type': 'application/json' } });
const run = (status: string, extra: Record<string, unknown> = {}) => ({ id: 'r1', run_id: 'r1', object: 'run', status, error: null, ...extra });

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

test('wait() polls until terminal and throws RunFailed with the run and a handle for failed runs', async () => {
  const states = ['queued', 'running', 'failed'];
  const { c, seen } = client([(u) => (u.pathname === '/v1/runs/r1' ? json(run(states.shift() ?? 'failed', { error: { code: 'lab_error', message: 'boom' } })) : undefined)]);
  await assert.rejects(c.runs.wait('r1', { pollIntervalMs: 1 }), (e: unknown) => {
    assert.ok(e instanceof RunFailed);
    assert.equal(e.run.status, 'failed');
    assert.equal(e.handle.id, 'r1');
    assert.match(e.message, /lab_error: boom/);
    return true;
  });
  assert.equal(seen.length, 3);
});

test('events({follow}) keeps polling through empty pages and stops after the terminal state event', async () => {
  const ev = (seq: number, type: string, data: Record<string, unknown> = {}): RunEvent => ({ seq, at: '', type, message: '', data });
  const pages = [
    { items: [ev(1, 'state_changed', { status: 'queued' })], has_more: false, next_after: 1 },
    { items: [], has_more: false, next_after: 1 },
    { items: [ev(2, 'state_changed', { status: 'running' }), ev(3, 'log')], has_more: true, next_after: 3 },
    { items: [ev(4, 'state_changed', { status: 'completed' }), ev(5, 'charge_settled')], has_more: false, next_after: 5 },
  ];
  const { c, seen } = client([(u) => (u.pathname === '/v1/runs/r1/events' ? json(pages.shift()) : undefined)]);
  const got: number[] = [];
  for await (const e of c.runs.handle('r1').events({ follow: true, pollIntervalMs: 1 })) got.push(e.seq);
  assert.deepEqual(got, [1, 2, 3, 4, 5]);
  assert.deepEqual(seen.map((s) => new URL(s, 'http://x').searchParams.get('after')), ['0', '1', '1', '3']);
});

test('events({follow}) ends even if the terminal event is never seen, once the run reads terminal', async () => {
  let eventReads = 0;
  const { c } = client([
    (u) => (u.pathname === '/v1/runs/r1/events' ? (eventReads++, json({ items: [], has_more: false, next_after: 0 })) : undefined),
    (u) => (u.pathname === '/v1/runs/r1' ? json(run('completed')) : undefined),
  ]);
  const got = [];
  for await (const e of c.runs.handle('r1').events({ follow: true, pollIntervalMs: 1 })) got.push(e);
  assert.deepEqual(got, []);
  assert.equal(eventReads, 6, 'five idle polls, a status check, one last read');
});

test('downloadArtifacts keeps only a plain file name from untrusted artifact names and verifies each file', async () => {
  const good = Buffer.from('a,b\n1,2\n');
  const digest = createHash('sha256').update(good).digest('hex');
  const art = (id: string, file_name: string, sha256 = digest, size_bytes = good.length) =>
    ({ id, artifact_id: id, role: 'x', file_name, content_type: 'text/csv', format: 'csv', size_bytes, sha256, status: 'stored', download_url: 'http://elsewhere.test/steal' });
  const { c, seen } = client([
    (u) => (u.pathname === '/v1/runs/r1/results' ? json({ run_id: 'r1', status: 'completed', outputs: {}, artifacts: [art('art_1', '../../evil.csv'), art('art_2', 'evil.csv'), art('art_3', '..')], provenance: {} }) : undefined),
    (u) => (/^\/v1\/runs\/r1\/artifacts\/art_\d$/.test(u.pathname) ? new Response(good) : undefined),
  ]);
  const dir = await mkdtemp(path.join(tmpdir(), 'sdk-unit-'));
  dirs.push(dir);
  const files = await c.runs.handle('r1').downloadArtifacts(path.join(dir, 'out'));
  assert.deepEqual((await readdir(path.join(dir, 'out'))).sort(), ['art_2-evil.csv', 'art_3', 'evil.csv']);
  assert.deepEqual(await readdir(dir), ['out'], 'nothing written outside the directory');
  for (const f of files) assert.deepEqual(await readFile(f.path), good);
  assert.ok(seen.every((s) => !s.includes('steal')), 'download_url is never fetched: bytes come from the configured base URL');
});

test('a body longer or shorter than recorded, or hashing differently, is an IntegrityError and leaves nothing', async () => {
  const bytes = Buffer.from('0123456789');
  const digest = createHash('sha256').update(bytes).digest('hex');
  const dir = await mkdtemp(path.join(tmpdir(), 'sdk-unit-'));
  dirs.push(dir);
  for (const [label, sha256, size] of [['longer', digest, 5], ['shorter', digest, 20], ['other bytes', 'ab'.repeat(32), 10]] as const) {
    const { c } = client([(u) => (u.pathname === '/v1/runs/r1/artifacts/art_1' ? new Response(bytes) : undefined)]);
    const artifact = { id: 'art_1', artifact_id: 'art_1', role: 'x', file_name: 'x', content_type: '', format: '', size_bytes: size, sha256, status: 'stored', download_url: '' };
    await assert.rejects(c.runs.downloadArtifact('r1', artifact, path.join(dir, 'x.bin')), IntegrityError, label);
    assert.deepEqual(await readdir(dir), [], label);
  }
});

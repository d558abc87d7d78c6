import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { IntegrityError, NotFoundError, RunFailed, RunTimeout, Silico, SilicoError, type RunEvent } from '../../sdk/src/index.ts';

// Run handles against a scripted fetch keyed by route, so streaming, polling, following
// and downloading are checked without a server. A route that ignores the request's
// headers answers JSON requests only: event-stream requests fall through to a 404.
type Route = (url: URL, headers: Record<string, string>, signal: AbortSignal) => Response | Promise<Response> | undefined;

function client(routes: Route[], options: { timeoutMs?: number } = {}) {
  const seen: string[] = [];
  const sent: Record<string, string>[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const headers = (init?.headers ?? {}) as Record<string, string>;
    seen.push(url.pathname + url.search);
    sent.push(headers);
    for (const r of routes) {
      const res = r(url, headers, init!.signal!);
      if (res) return res;
    }
    return new Response(JSON.stringify({ error: { type: 'not_found_error', code: 'route_not_found', message: 'no', param: null, details: {}, request_id: 'x' } }), { status: 404 });
  };
  const c = new Silico({ apiKey: 'k', baseUrl: 'http://api.test/v1', fetch: fetch as typeof globalThis.fetch, retry: { initialDelayMs: 1, minDelayMs: 1 }, ...options });
  return { c, seen, sent };
}
const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { 'Content-Type': 'application/json' } });
const run = (status: string, extra: Record<string, unknown> = {}) => ({ id: 'r1', run_id: 'r1', object: 'run', status, error: null, ...extra });
const ev = (seq: number, type: string, data: Record<string, unknown> = {}): RunEvent => ({ seq, at: '', type, message: '', data });
const wantsStream = (h: Record<string, string>) => h.Accept === 'text/event-stream';
const sse = (events: RunEvent[]) => events.map((e) => `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');

/**
 * An event-stream answer sending `text` in 7-byte chunks (so events straddle chunks),
 * then ending as `end` says: close, fail like a lost connection, or stay open. `cancelled`
 * is set when the client lets go of it.
 */
function stream(text: string, end: 'close' | 'error' | 'open' = 'close') {
  const state = { cancelled: false };
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  // Pulled one chunk per read, so the error comes after the events rather than discarding them.
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at < bytes.length) controller.enqueue(bytes.slice(at, (at += 7)));
      else if (end === 'close') controller.close();
      else if (end === 'error') controller.error(new TypeError('terminated'));
    },
    cancel() {
      state.cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { res: new Response(body, { headers: { 'Content-Type': 'text/event-stream' } }), state };
}

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

test('wait() polls where no event stream is served and throws RunFailed with the run and a handle for failed runs', async () => {
  const states = ['queued', 'running', 'failed'];
  const { c, seen } = client([(u) => (u.pathname === '/v1/runs/r1' ? json(run(states.shift() ?? 'failed', { error: { code: 'lab_error', message: 'boom' } })) : undefined)]);
  await assert.rejects(c.runs.wait('r1', { pollIntervalMs: 1 }), (e: unknown) => {
    assert.ok(e instanceof RunFailed);
    assert.equal(e.run.status, 'failed');
    assert.equal(e.handle.id, 'r1');
    assert.match(e.message, /lab_error: boom/);
    return true;
  });
  assert.deepEqual(seen, ['/v1/runs/r1', '/v1/runs/r1/events', '/v1/runs/r1', '/v1/runs/r1'], 'one stream attempt (404), then polling');
});

test('events({follow}) where no event stream is served keeps polling through empty pages and stops after the terminal state event', async () => {
  const pages = [
    { items: [ev(1, 'state_changed', { status: 'queued' })], has_more: false, next_after: 1 },
    { items: [], has_more: false, next_after: 1 },
    { items: [ev(2, 'state_changed', { status: 'running' }), ev(3, 'log')], has_more: true, next_after: 3 },
    { items: [ev(4, 'state_changed', { status: 'completed' }), ev(5, 'charge_settled')], has_more: false, next_after: 5 },
  ];
  const { c, seen } = client([(u, h) => (u.pathname === '/v1/runs/r1/events' && !wantsStream(h) ? json(pages.shift()) : undefined)]);
  const got: number[] = [];
  for await (const e of c.runs.handle('r1').events({ follow: true, pollIntervalMs: 1 })) got.push(e.seq);
  assert.deepEqual(got, [1, 2, 3, 4, 5]);
  assert.deepEqual(seen.map((s) => new URL(s, 'http://x').searchParams.get('after')), [null, '0', '1', '1', '3'], 'one stream attempt, then the pages');
});

test('events({follow}) ends even if the terminal event is never seen, once the run reads terminal', async () => {
  let eventReads = 0;
  const { c } = client([
    (u, h) => (u.pathname === '/v1/runs/r1/events' && !wantsStream(h) ? (eventReads++, json({ items: [], has_more: false, next_after: 0 })) : undefined),
    (u) => (u.pathname === '/v1/runs/r1' ? json(run('completed')) : undefined),
  ]);
  const got = [];
  for await (const e of c.runs.handle('r1').events({ follow: true, pollIntervalMs: 1 })) got.push(e);
  assert.deepEqual(got, []);
  assert.equal(eventReads, 6, 'five idle polls, a status check, one last read');
});

const streamRoute = (next: () => Response | undefined): Route => (u, h) => (u.pathname === '/v1/runs/r1/events' && wantsStream(h) ? next() : undefined);

test('wait() follows the event stream and returns at the terminal event, reading the run once more, without polling', async () => {
  const states = ['running', 'completed'];
  const live = stream(`: keep-alive\n\n${sse([ev(1, 'state_changed', { status: 'running' }), ev(2, 'progress', { fraction: 0.5 }), ev(3, 'state_changed', { status: 'completed' })])}`, 'open');
  const { c, seen, sent } = client([(u) => (u.pathname === '/v1/runs/r1' ? json(run(states.shift()!)) : undefined), streamRoute(() => live.res)]);
  const done = await c.runs.wait('r1', { pollIntervalMs: 60_000 });
  assert.equal(done.status, 'completed');
  assert.deepEqual(seen, ['/v1/runs/r1', '/v1/runs/r1/events', '/v1/runs/r1']);
  assert.equal(sent[1]!.Authorization, 'Bearer k', 'the stream is opened through the shared client');
  assert.ok(live.state.cancelled, 'the stream, still open after the terminal event, is let go');
});

test('events({follow}) resumes a dropped stream with Last-Event-ID and yields each event once', async () => {
  const connections = [
    stream(sse([ev(1, 'state_changed', { status: 'running' }), ev(2, 'log')]), 'error'),
    // Event 2 again, as a careless proxy might replay it: the caller must not see it twice.
    stream(sse([ev(2, 'log'), ev(3, 'progress'), ev(4, 'state_changed', { status: 'completed' }), ev(5, 'log')])),
  ];
  const { c, seen, sent } = client([(u) => (u.pathname === '/v1/runs/r1' ? json(run('running')) : undefined), streamRoute(() => connections.shift()?.res)]);
  const got: number[] = [];
  for await (const e of c.runs.handle('r1').events({ follow: true })) got.push(e.seq);
  assert.deepEqual(got, [1, 2, 3, 4, 5], 'what the server sent with the terminal event is yielded too');
  assert.deepEqual(seen, ['/v1/runs/r1/events', '/v1/runs/r1', '/v1/runs/r1/events'], 'a status read between the connections');
  assert.equal(sent[0]!['Last-Event-ID'], undefined);
  assert.equal(sent[2]!['Last-Event-ID'], '2');
});

test('a stream silent for longer than the request timeout counts as dropped and is resumed', async () => {
  const silent = stream(sse([ev(1, 'state_changed', { status: 'running' })]), 'open');
  const connections = [silent, stream(sse([ev(2, 'state_changed', { status: 'completed' })]))];
  const { c, sent } = client([(u) => (u.pathname === '/v1/runs/r1' ? json(run('running')) : undefined), streamRoute(() => connections.shift()?.res)], { timeoutMs: 50 });
  const got: number[] = [];
  for await (const e of c.runs.handle('r1').events({ follow: true })) got.push(e.seq);
  assert.deepEqual(got, [1, 2]);
  assert.equal(sent.at(-1)!['Last-Event-ID'], '1');
  assert.ok(silent.state.cancelled, 'the silent connection is let go');
});

test('wait() falls back to polling when the stream request is answered with another content type', async () => {
  const states = ['queued', 'running', 'completed'];
  const { c, seen } = client([
    (u) => (u.pathname === '/v1/runs/r1' ? json(run(states.shift()!)) : undefined),
    streamRoute(() => new Response('<html>a proxy</html>', { headers: { 'Content-Type': 'text/html' } })),
  ]);
  assert.equal((await c.runs.wait('r1', { pollIntervalMs: 1 })).status, 'completed');
  assert.deepEqual(seen, ['/v1/runs/r1', '/v1/runs/r1/events', '/v1/runs/r1', '/v1/runs/r1']);
});

test('wait() polls when a proxy buffers the stream: no headers, or not one byte, within the request timeout', async () => {
  const headersHeld = (signal: AbortSignal) => new Promise<Response>((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
  for (const [label, answer] of [['headers held', headersHeld], ['body held', () => stream('', 'open').res]] as const) {
    const states = ['running', 'completed'];
    const { c, seen } = client([(u) => (u.pathname === '/v1/runs/r1' ? json(run(states.shift()!)) : undefined), (u, h, signal) => (u.pathname === '/v1/runs/r1/events' && wantsStream(h) ? answer(signal) : undefined)], { timeoutMs: 30 });
    assert.equal((await c.runs.wait('r1', { pollIntervalMs: 1 })).status, 'completed', label);
    assert.deepEqual(seen.filter((s) => s !== '/v1/runs/r1/events'), ['/v1/runs/r1', '/v1/runs/r1'], label);
    assert.ok(seen.includes('/v1/runs/r1/events'), label);
  }
});

test('wait({timeoutMs}) ends a stream that is still open, reads the run once more and throws RunTimeout with the handle', async () => {
  let reads = 0;
  const live = stream(`${sse([ev(1, 'state_changed', { status: 'running' })])}: keep-alive\n\n`, 'open');
  const { c, seen } = client([(u) => (u.pathname === '/v1/runs/r1' ? json(run('running', { progress: ++reads / 10 })) : undefined), streamRoute(() => live.res)]);
  const started = Date.now();
  await assert.rejects(c.runs.wait('r1', { timeoutMs: 50 }), (e: unknown) => {
    assert.ok(e instanceof RunTimeout);
    assert.equal(e.handle.id, 'r1');
    assert.equal(e.run?.progress, 0.2, 'the run as read after the deadline');
    assert.equal(e.handle.lastSeen?.progress, 0.2);
    return true;
  });
  assert.ok(Date.now() - started < 5_000, 'the deadline, not the 60 s idle limit, ended the stream');
  assert.deepEqual(seen, ['/v1/runs/r1', '/v1/runs/r1/events', '/v1/runs/r1']);
  assert.ok(live.state.cancelled);
});

test('wait({timeoutMs: 0}) reads the status once and opens no stream', async () => {
  const { c, seen } = client([(u) => (u.pathname === '/v1/runs/r1' ? json(run('running')) : undefined), streamRoute(() => assert.fail('no stream expected'))]);
  await assert.rejects(c.runs.wait('r1', { timeoutMs: 0 }), RunTimeout);
  assert.deepEqual(seen, ['/v1/runs/r1']);
});

test("events({follow, signal}) stops with the signal's reason and lets go of the stream", async () => {
  const live = stream(sse([ev(1, 'log')]), 'open');
  const { c } = client([streamRoute(() => live.res)]);
  const stop = new AbortController();
  const got: number[] = [];
  await assert.rejects((async () => {
    for await (const e of c.runs.handle('r1').events({ follow: true, signal: stop.signal })) {
      got.push(e.seq);
      setTimeout(() => stop.abort(new Error('stopped by the caller')), 10);
    }
  })(), /stopped by the caller/);
  assert.deepEqual(got, [1]);
  assert.ok(live.state.cancelled);
});

test('downloadArtifacts keeps only a plain file name from untrusted artifact names and verifies each file', async () => {
  const good = Buffer.from('a,b\n1,2\n');
  const digest = createHash('sha256').update(good).digest('hex');
  const art = (id: string, file_name: string, sha256 = digest, size_bytes = good.length) =>
    ({ id, artifact_id: id, role: 'x', file_name, content_type: 'text/csv', format: 'csv', size_bytes, sha256, status: 'stored', download_url: 'http://elsewhere.test/steal', resource_uri: null });
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
    const artifact = { id: 'art_1', artifact_id: 'art_1', role: 'x', file_name: 'x', content_type: '', format: '', size_bytes: size, sha256, status: 'stored' as const, download_url: '', resource_uri: null, direct_download: null };
    await assert.rejects(c.runs.downloadArtifact('r1', artifact, path.join(dir, 'x.bin')), IntegrityError, label);
    assert.deepEqual(await readdir(dir), [], label);
  }
});

test('a private artifact (listed with download_url null) is not downloaded: a SilicoError naming it, and no download is requested', async () => {
  const meta = { id: 'art_p', artifact_id: 'art_p', role: 'private_outputs', file_name: 'private-outputs.json', content_type: 'application/json', format: 'json', size_bytes: 2, sha256: 'ab'.repeat(32), status: 'stored', download_url: null, resource_uri: null, public: false, created_at: '2026-01-01T00:00:00Z' };
  const { c, seen } = client([(u) => (u.pathname === '/v1/runs/r1/artifacts/art_p/metadata' ? json(meta) : undefined)]);
  const dir = await mkdtemp(path.join(tmpdir(), 'sdk-unit-'));
  dirs.push(dir);
  for (const attempt of [() => c.runs.downloadArtifact('r1', 'art_p', path.join(dir, 'x.json')), () => c.runs.artifactBytes('r1', 'art_p')]) {
    await assert.rejects(attempt(), (err: unknown) => err instanceof SilicoError && !(err instanceof NotFoundError) && /art_p of run r1 is private/.test((err as Error).message));
  }
  assert.deepEqual(seen, ['/v1/runs/r1/artifacts/art_p/metadata', '/v1/runs/r1/artifacts/art_p/metadata'], 'only its metadata was read');
  assert.deepEqual(await readdir(dir), []);
});


test('with direct, the bytes come from the presigned URL the API lists (asked for with direct=true when not listed), without the API key, verified the same way', async () => {
  const bytes = Buffer.from('0123456789');
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const dir = await mkdtemp(path.join(tmpdir(), 'sdk-unit-'));
  dirs.push(dir);
  const presigned = 'http://store.test/silico/blobs/sha256/x?X-Amz-Signature=abc';
  const listed = { id: 'art_1', artifact_id: 'art_1', role: 'x', file_name: 'x', content_type: '', format: '', size_bytes: 10, sha256, status: 'stored' as const, download_url: 'http://api.test/v1/runs/r1/artifacts/art_1', resource_uri: null, direct_download: null };
  const { c, seen, sent } = client([
    (u) => (u.pathname === '/v1/runs/r1/artifacts/art_1/metadata' && u.searchParams.get('direct') === 'true' ? json({ ...listed, public: true, created_at: '', direct_download: { url: presigned, expires_at: '' } }) : undefined),
    (u) => (u.host === 'store.test' ? new Response(bytes) : undefined),
  ]);
  const file = await c.runs.downloadArtifact('r1', listed, path.join(dir, 'x.bin'), { direct: true });
  assert.deepEqual(await readFile(file.path), bytes);
  assert.deepEqual(seen, ['/v1/runs/r1/artifacts/art_1/metadata?direct=true', '/silico/blobs/sha256/x?X-Amz-Signature=abc'], 'the URL asked for, then the store: the API relays nothing');
  assert.equal(sent[1]!.Authorization, undefined, 'the API key never goes to the store');
  const other = client([(u) => (u.host === 'store.test' ? new Response(Buffer.from('9876543210')) : undefined)]);
  await assert.rejects(other.c.runs.downloadArtifact('r1', { ...listed, direct_download: { url: presigned, expires_at: '' } }, path.join(dir, 'y.bin'), { direct: true }), IntegrityError);
  assert.equal(other.seen.length, 1, 'listed: fetched from the store at once');
});

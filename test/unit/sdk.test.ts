import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  ApiError, AuthenticationError, ConflictError, ConnectionError, DEFAULT_RETRY_POLICY, IdempotencyConflictError, InsufficientCreditsError,
  NotFoundError, NotImplementedError, PermissionError, RateLimitError, ServerError, Silico, ValidationError, backoffDelayMs,
  errorFromResponse, isRetryableStatus, parseRetryAfter, retryDelayMs, type RetryPolicy,
} from '../../sdk/src/index.ts';
import { path, queryString } from '../../sdk/src/core/url.ts';

const policy: RetryPolicy = DEFAULT_RETRY_POLICY;

test('backoff: exponential ceiling, jitter between half and full delay, floored, capped', () => {
  assert.equal(backoffDelayMs(1, policy, () => 1), 500);
  assert.equal(backoffDelayMs(1, policy, () => 0), 250);
  assert.equal(backoffDelayMs(2, policy, () => 1), 1000);
  assert.equal(backoffDelayMs(3, policy, () => 0), 1000);
  assert.equal(backoffDelayMs(10, policy, () => 1), 8000, 'capped at maxDelayMs');
  fc.assert(fc.property(fc.integer({ min: 1, max: 30 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (retry, r) => {
    const ceiling = Math.min(policy.initialDelayMs * 2 ** (retry - 1), policy.maxDelayMs);
    const d = backoffDelayMs(retry, policy, () => r);
    return d >= Math.max(policy.minDelayMs, Math.floor(ceiling / 2)) && d <= ceiling;
  }));
  assert.equal(backoffDelayMs(1, { ...policy, initialDelayMs: 10 }, () => 0), policy.minDelayMs, 'the floor holds when jitter draws near zero');
});

test('Retry-After: delta-seconds and HTTP dates; absent or invalid is undefined', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');
  assert.equal(parseRetryAfter('1', now), 1000);
  assert.equal(parseRetryAfter(' 120 ', now), 120_000);
  assert.equal(parseRetryAfter('0', now), 0);
  assert.equal(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now), 30_000);
  assert.equal(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now), 0, 'a date in the past means now');
  for (const bad of [null, undefined, '', '-5', 'soon', '1e3']) assert.equal(parseRetryAfter(bad, now), undefined, String(bad));
});

test('retry delays honour Retry-After as a minimum, and give up past the cap or the retry budget', () => {
  assert.equal(retryDelayMs(1, 1000, policy, () => 0), 1000);
  assert.equal(retryDelayMs(3, 0, policy, () => 1), 2000, 'the backoff still applies when longer');
  assert.equal(retryDelayMs(1, policy.maxRetryAfterMs + 1, policy), null, 'a daily-limit Retry-After is returned to the caller');
  assert.equal(retryDelayMs(policy.maxRetries + 1, undefined, policy), null);
  assert.notEqual(retryDelayMs(policy.maxRetries, undefined, policy), null);
});

test('retryable: transport-like statuses and idempotency_in_progress only', () => {
  for (const s of [408, 425, 429, 500, 502, 503, 504]) assert.ok(isRetryableStatus(s), String(s));
  for (const s of [400, 401, 402, 403, 404, 413, 415, 422, 501]) assert.ok(!isRetryableStatus(s), String(s));
  assert.ok(isRetryableStatus(409, 'idempotency_in_progress'));
  assert.ok(!isRetryableStatus(409, 'idempotency_conflict'));
  assert.ok(!isRetryableStatus(409, 'plan_expired'));
});

const envelope = (status: number, code: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ error: { type: 'x_error', code, message: `m ${code}`, param: 'p', details: { a: 1 }, request_id: 'req-1', ...extra } });

test('error classes are chosen by status, and by code for idempotency conflicts', () => {
  const cases: Array<[number, string, typeof ApiError]> = [
    [400, 'idempotency_key_required', ValidationError], [422, 'unknown_inputs', ValidationError], [401, 'invalid_api_key', AuthenticationError],
    [402, 'insufficient_credits', InsufficientCreditsError], [403, 'gateway_not_enabled', PermissionError], [404, 'run_not_found', NotFoundError],
    [409, 'plan_expired', ConflictError], [409, 'idempotency_conflict', IdempotencyConflictError], [429, 'rate_limited', RateLimitError],
    [501, 'not_implemented', NotImplementedError], [500, 'internal_error', ServerError], [503, 'service_unavailable', ServerError], [418, 'teapot', ApiError],
  ];
  for (const [status, code, Cls] of cases) {
    const e = errorFromResponse(status, new Headers(), envelope(status, code));
    assert.equal(e.constructor, Cls, `${status} ${code} → ${e.constructor.name}`);
    assert.ok(e instanceof ApiError);
    assert.equal(e.status, status);
    assert.equal(e.statusCode, status);
    assert.equal(e.code, code);
    assert.equal(e.type, 'x_error');
    assert.equal(e.param, 'p');
    assert.deepEqual(e.details, { a: 1 });
    assert.equal(e.requestId, 'req-1');
  }
  assert.ok(errorFromResponse(409, new Headers(), envelope(409, 'idempotency_conflict')) instanceof ConflictError);
});

test('a non-envelope error body still gives a typed error with the request id header', () => {
  const e = errorFromResponse(502, new Headers({ 'X-Request-ID': 'hdr-1' }), '<html>bad gateway</html>');
  assert.ok(e instanceof ServerError);
  assert.equal(e.code, 'http_502');
  assert.equal(e.requestId, 'hdr-1');
  assert.match(e.message, /bad gateway/);
  assert.equal(e.raw, '<html>bad gateway</html>');
});

test('RateLimitError.retryAfterSeconds reads Retry-After, else details.retry_after_seconds', () => {
  const h = errorFromResponse(429, new Headers({ 'Retry-After': '7' }), envelope(429, 'rate_limited')) as RateLimitError;
  assert.equal(h.retryAfterSeconds, 7);
  const d = errorFromResponse(429, new Headers(), envelope(429, 'rate_limited', { details: { retry_after_seconds: 3 } })) as RateLimitError;
  assert.equal(d.retryAfterSeconds, 3);
});

test('URLs: path segments are encoded, query arrays repeat, objects become bracketed keys, nulls are left out', () => {
  assert.equal(path`/hub/releases/${'platform/sir@1.0.0'}`, '/hub/releases/platform%2Fsir%401.0.0');
  assert.equal(queryString({ limit: 2, cursor: null, tags: ['a', 'b'], metadata: { study: 'x y' }, q: undefined }), '?limit=2&tags=a&tags=b&metadata%5Bstudy%5D=x+y');
  assert.equal(queryString({}), '');
});

/** A scripted fetch: answers in order, records what it was sent. */
function scripted(answers: Array<() => Response | Promise<Response>>) {
  const seen: Array<{ url: string; init: RequestInit }> = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit) => {
    seen.push({ url: String(url), init: init ?? {} });
    const next = answers.shift();
    if (!next) throw new Error('no more scripted answers');
    return next();
  };
  return { fetch: fetch as typeof globalThis.fetch, seen };
}
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  () => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json', ...headers } });
const fast = { retry: { initialDelayMs: 1, minDelayMs: 1, maxDelayMs: 2 } };
const header = (init: RequestInit, name: string) => (init.headers as Record<string, string>)[name];

test('one idempotency key per logical call, reused by every retry; a caller key wins; GETs carry none', async () => {
  const refused = () => Promise.reject(new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } }));
  const s = scripted([refused, json(503, JSON.parse(envelope(503, 'service_unavailable'))), json(200, { id: 'r1' }), json(200, { id: 'r2' }), json(200, { id: 'r3' })]);
  const client = new Silico({ apiKey: 'sk_test', baseUrl: 'http://api.test/v1/', fetch: s.fetch, ...fast });
  await client.runs.create({ ref: 'platform/x' });
  const keys = s.seen.map((r) => header(r.init, 'Idempotency-Key'));
  assert.equal(keys.length, 3);
  assert.match(keys[0]!, /^[0-9a-f-]{36}$/);
  assert.deepEqual(new Set(keys).size, 1, 'the same key on all three attempts');
  await client.runs.create({ ref: 'platform/x' }, { idempotencyKey: 'mine-1' });
  assert.equal(header(s.seen[3]!.init, 'Idempotency-Key'), 'mine-1');
  await client.runs.get('abc');
  assert.equal(header(s.seen[4]!.init, 'Idempotency-Key'), undefined);
  assert.equal(s.seen[4]!.url, 'http://api.test/v1/runs/abc');
  assert.equal(header(s.seen[4]!.init, 'Authorization'), 'Bearer sk_test');
});

test('validation, auth and idempotency-conflict answers are not retried', async () => {
  for (const [status, code, Cls] of [[422, 'invalid_input_value', ValidationError], [401, 'invalid_api_key', AuthenticationError], [409, 'idempotency_conflict', IdempotencyConflictError]] as const) {
    const s = scripted([json(status, JSON.parse(envelope(status, code))), json(200, {})]);
    const client = new Silico({ apiKey: 'k', baseUrl: 'http://api.test/v1', fetch: s.fetch, ...fast });
    await assert.rejects(client.runs.create({ ref: 'x' }), Cls);
    assert.equal(s.seen.length, 1, `${status} sent once`);
  }
});

test('transport failures exhaust the retry budget, then surface as ConnectionError', async () => {
  const s = scripted(Array.from({ length: 5 }, () => () => Promise.reject(new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } }))));
  const client = new Silico({ apiKey: 'k', baseUrl: 'http://api.test/v1', fetch: s.fetch, maxRetries: 2, ...fast });
  await assert.rejects(client.account.get(), (e: unknown) => e instanceof ConnectionError && /ECONNREFUSED/.test(e.message));
  assert.equal(s.seen.length, 3);
});

test('a list request is lazy, gives one page when awaited, and every item across pages when iterated', async () => {
  const s = scripted([
    json(200, { items: [{ id: 'a' }, { id: 'b' }], has_more: true, next_cursor: 'c1' }),
    json(200, { items: [{ id: 'c' }], has_more: false, next_cursor: null }),
    json(200, { items: [{ id: 'a' }, { id: 'b' }], has_more: true, next_cursor: 'c1' }),
  ]);
  const client = new Silico({ apiKey: 'k', baseUrl: 'http://api.test/v1', fetch: s.fetch });
  const request = client.runs.list({ limit: 2, metadata: { k: 'v' } });
  assert.equal(s.seen.length, 0, 'nothing sent before it is awaited or iterated');
  const ids: string[] = [];
  for await (const r of request) ids.push(r.id);
  assert.deepEqual(ids, ['a', 'b', 'c']);
  assert.equal(s.seen[0]!.url, 'http://api.test/v1/runs?limit=2&metadata%5Bk%5D=v');
  assert.equal(s.seen[1]!.url, 'http://api.test/v1/runs?limit=2&metadata%5Bk%5D=v&cursor=c1');
  const page = await client.runs.list({ limit: 2 });
  assert.deepEqual(page.items.map((r) => r.id), ['a', 'b']);
  assert.equal(page.has_more, true);
  assert.equal(page.next_cursor, 'c1');
});

test('the client needs an API key and a base URL, from options or the environment', () => {
  const saved = { key: process.env.SILICO_API_KEY, base: process.env.SILICO_BASE_URL };
  try {
    delete process.env.SILICO_API_KEY;
    delete process.env.SILICO_BASE_URL;
    assert.throws(() => new Silico(), /SILICO_API_KEY/);
    process.env.SILICO_API_KEY = 'sk_env';
    assert.throws(() => new Silico(), /SILICO_BASE_URL/);
    process.env.SILICO_BASE_URL = 'http://env.test/v1/';
    assert.equal(new Silico().baseUrl, 'http://env.test/v1');
  } finally {
    if (saved.key === undefined) delete process.env.SILICO_API_KEY;
    else process.env.SILICO_API_KEY = saved.key;
    if (saved.base === undefined) delete process.env.SILICO_BASE_URL;
    else process.env.SILICO_BASE_URL = saved.base;
  }
});

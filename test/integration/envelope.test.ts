import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorOf, closeTestDb, BASE_URL } from '../helpers.ts';
import { CONTRACT_RULES } from '../contract.ts';

after(closeTestDb);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('every success carries the envelope and our request id in body and both headers', async () => {
  const res = await call('GET', '/account', { headers: { 'X-Request-ID': 'client-chosen-id' } });
  assert.equal(res.status, 200);
  const id = res.headers.get('x-request-id')!;
  assert.match(id, UUID);
  assert.notEqual(id, 'client-chosen-id', 'a client request id is not trusted as ours');
  assert.equal(res.headers.get('request-id'), id);
  assert.equal(res.body.request_id, id);
  assert.equal(res.body.schema_version, CONTRACT_RULES.envelope.schema_version);
  assert.deepEqual(res.body.warnings, []);
  assert.deepEqual(res.body.links, {});
  assert.ok(res.body.next_actions.length > 0);
  for (const a of res.body.next_actions) {
    assert.equal(typeof a.tool, 'string');
    assert.equal(typeof a.description, 'string');
    assert.equal(typeof a.arguments, 'object');
    assert.match(a.http.method, /^(GET|POST|PATCH|PUT)$/);
    assert.match(a.http.path, /^\/v1\//);
  }
});

test('unknown route is 404 route_not_found in the envelope', async () => {
  for (const p of ['/nope', '/runs/x/y/z/w', '']) {
    const res = await call('GET', p);
    assert.equal(res.status, 404, p);
    const e = errorOf(res);
    assert.equal(e.code, 'route_not_found');
    assert.equal(e.type, 'not_found_error');
  }
  const outside = await call('GET', `${BASE_URL.replace(/\/v1$/, '')}/elsewhere`);
  assert.equal(errorOf(outside).code, 'route_not_found');
});

test('wrong method is 405 method_not_allowed with Allow', async () => {
  const res = await call('DELETE', '/account');
  assert.equal(res.status, 405);
  const e = errorOf(res);
  assert.equal(e.code, 'method_not_allowed');
  assert.equal(e.type, 'invalid_request_error');
  assert.match(res.headers.get('allow')!, /GET/);
});

test('malformed JSON is 400 invalid_request', async () => {
  for (const raw of ['{bad', '"just a string"', '[1,', '']) {
    const res = await call('POST', '/run-plans', { rawBody: raw || '{', headers: { 'Content-Type': 'application/json' } });
    assert.equal(res.status, 400, raw);
    const e = errorOf(res);
    assert.equal(e.code, 'invalid_request');
    assert.equal(e.type, 'validation_error');
  }
});

test('a body that is not JSON is 415 unsupported_media_type', async () => {
  const res = await call('POST', '/run-plans', { rawBody: 'a=1', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  assert.equal(res.status, 415);
  const e = errorOf(res);
  assert.equal(e.code, 'unsupported_media_type');
  assert.equal(e.type, 'invalid_request_error');
});

test('an oversized body is 413 payload_too_large', async () => {
  const big = JSON.stringify({ capability_ref: 'a/b@1.0.0', inputs: { blob: 'x'.repeat(1024 * 1024 + 10) } });
  const res = await call('POST', '/run-plans', { rawBody: big, headers: { 'Content-Type': 'application/json' } });
  assert.equal(res.status, 413);
  const e = errorOf(res);
  assert.equal(e.code, 'payload_too_large');
  assert.equal(e.type, 'invalid_request_error');
});

test('schema failures name a precise code and param', async () => {
  const cases: Array<[string, string, unknown, number, string, string | null]> = [
    ['GET', '/capabilities?limit=abc', undefined, 422, 'parameter_invalid_type', 'limit'],
    ['GET', '/capabilities?limit=1000', undefined, 422, 'parameter_out_of_range', 'limit'],
    ['GET', '/capabilities?bogus=1', undefined, 422, 'parameter_unknown', 'bogus'],
    ['GET', '/capabilities?cursor=not-a-cursor', undefined, 422, 'invalid_cursor', 'cursor'],
    ['POST', '/workspace-revisions', { plan_id: 'nope', plan_sha256: 'a'.repeat(64) }, 422, 'parameter_invalid_format', 'plan_id'],
    ['POST', '/workspace-revisions', { plan_sha256: 'a'.repeat(64) }, 422, 'parameter_missing', 'plan_id'],
    ['POST', '/experiment-plans', { name: 'x', arms: [{ label: 1, workspace_id: '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d', revision_id: '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d' }] }, 422, 'parameter_invalid_type', 'arms[0].label'],
    ['PUT', '/labs/lab_x/visibility', { visibility: 'everyone' }, 422, 'parameter_invalid_value', 'visibility'],
  ];
  for (const [method, path, body, status, code, param] of cases) {
    const res = await call(method, path, { body });
    assert.equal(res.status, status, `${method} ${path}: ${res.text}`);
    const e = errorOf(res);
    assert.equal(e.type, 'validation_error');
    assert.equal(e.code, code, `${method} ${path}`);
    assert.equal(e.param, param, `${method} ${path}`);
  }
});

test('a string Postgres cannot store (U+0000, or a lone surrogate in jsonb) is refused with the field named, never a 500', async () => {
  const run = (body: unknown) => call('POST', '/runs', { body, headers: { 'Idempotency-Key': crypto.randomUUID() } });
  const ref = 'platform/microbial-growth@1.0.0';
  const cases: Array<[Promise<Awaited<ReturnType<typeof call>>>, string]> = [
    [run({ ref, inputs: {}, metadata: { note: 'a\u0000b' } }), 'metadata.note'],
    [run({ ref, inputs: {}, metadata: { 'no\u0000te': 'ab' } }), 'metadata.no\\u0000te'],
    [call('POST', '/run-plans', { body: { capability_ref: ref, inputs: { rates: ['x', 'y\u0000'] } } }), 'inputs.rates[1]'],
    [call('GET', '/runs?capability=a%00b'), 'capability'],
    [call('GET', '/runs?metadata[note]=a%00b'), 'metadata[note]'],
    [call('GET', '/files?query=%00'), 'query'],
    [call('POST', '/runs', { rawBody: `{"ref":"${ref}","inputs":{},"metadata":{"note":"\\ud800"}}`, headers: { 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() } }), 'metadata.note'],
    [call('POST', '/runs', { rawBody: `{"ref":"${ref}","inputs":{},"metadata":{"\\udc00":"x"}}`, headers: { 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() } }), 'metadata.\\udc00'],
  ];
  for (const [pending, param] of cases) {
    const res = await pending;
    assert.equal(res.status, 422, res.text);
    assert.equal(errorOf(res).code, 'parameter_invalid_format');
    assert.equal(errorOf(res).param, param);
  }
});

test('JSON nested deeper than 32 levels is refused where it gets too deep (it overflowed JSON.stringify: a 500)', async () => {
  for (const depth of [33, 100_000]) {
    const deep = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const res = await call('POST', '/run-plans', { rawBody: `{"capability_ref":"platform/microbial-growth@1.0.0","inputs":{"x":${deep}}}`, headers: { 'Content-Type': 'application/json' } });
    assert.equal(res.status, 422, res.text.slice(0, 300));
    assert.equal(errorOf(res).code, 'parameter_too_deep');
    assert.equal(errorOf(res).param, `inputs.x${'[0]'.repeat(30)}`);
  }
  const fine = `${'['.repeat(30)}1${']'.repeat(30)}`;
  const res = await call('POST', '/run-plans', { rawBody: `{"capability_ref":"platform/microbial-growth@1.0.0","inputs":{"x":${fine}}}`, headers: { 'Content-Type': 'application/json' } });
  assert.equal(errorOf(res).code, 'unknown_inputs', 'within the bound, the request goes on to its own checks');
});

test('forged cursors, a body that lies about its encoding, and numbers past a double are client errors, never 500s', async () => {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  for (const [path, cursor] of [['/runs', b64(['x', 'y'])], ['/files', b64([1, 2])], ['/workspaces', b64(['2020-01-01T00:00:00.000000', 'not-a-uuid'])], ['/labs', b64(['a\u0000', 'b'])], ['/hub/search', b64([2 ** 63])]] as const) {
    const res = await call('GET', `${path}?cursor=${cursor}`);
    assert.equal(res.status, 422, `${path}: ${res.text}`);
    assert.equal(errorOf(res).code, 'invalid_cursor');
  }
  const gz = await call('POST', '/workspaces', { rawBody: '{"title":"a"}', headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' } });
  assert.equal(gz.status, 400, gz.text);
  assert.equal(errorOf(gz).code, 'invalid_request');
  const inf = await call('POST', '/runs', { rawBody: '{"ref":"platform/enzyme-kinetics@1.0.0","inputs":{"initial_substrate":1e400}}', headers: { 'Content-Type': 'application/json', 'Idempotency-Key': crypto.randomUUID() } });
  assert.equal(inf.status, 422, inf.text);
  assert.equal(errorOf(inf).code, 'parameter_out_of_range');
  assert.equal(errorOf(inf).param, 'inputs.initial_substrate');
});

test('managed-lab route errors carry resolution, retryable and gateway_request_id', async () => {
  const res = await call('POST', '/runs', { body: { ref: 'platform/x' } });
  assert.equal(res.status, 400);
  const e = errorOf(res);
  assert.equal(e.code, 'idempotency_key_required');
  assert.equal(typeof e.details.resolution, 'string');
  assert.equal(e.details.retryable, false);
  assert.equal(e.details.gateway_request_id, e.request_id);
});

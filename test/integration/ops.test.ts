import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, closeTestDb, BASE_URL, spawnApi } from '../helpers.ts';

after(closeTestDb);
const ROOT = BASE_URL.replace(/\/v1$/, '');

test('GET /healthz answers while the process lives', async () => {
  const res = await fetch(`${ROOT}/healthz`);
  assert.equal(res.status, 200);
  assert.equal((await res.json()).status, 'ok');
});

test('GET /readyz checks Postgres, Temporal and the object store', async () => {
  const res = await fetch(`${ROOT}/readyz`);
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.deepEqual(body.checks, { postgres: 'ok', temporal: 'ok', object_store: 'ok' });
});

test('GET /readyz is 503 naming the failing dependency', async () => {
  const replica = await spawnApi({ S3_ENDPOINT: 'http://127.0.0.1:9', TEMPORAL_ADDRESS: '127.0.0.1:9' });
  try {
    const res = await fetch(`${replica.base.replace(/\/v1$/, '')}/readyz`);
    assert.equal(res.status, 503);
    const body = await res.json();
    assert.deepEqual(body.failing.sort(), ['object_store', 'temporal']);
    assert.equal(body.checks.postgres, 'ok');
    assert.ok(res.headers.get('retry-after'));
  } finally {
    await replica.stop();
  }
});

test('GET /metrics exposes Prometheus metrics with request durations by route', async () => {
  await call('GET', '/account');
  const res = await fetch(`${ROOT}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.match(text, /silico_http_request_duration_seconds_count\{method="GET",route="GET \/account",status="200"\} \d+/);
  assert.match(text, /process_cpu_seconds_total/);
});

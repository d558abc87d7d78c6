import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import getPort from 'get-port';
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

test('GET /readyz with Temporal and the object store out: 200 `degraded` naming them (the replica stays in rotation for what needs neither), and a write that needs one answers 503 naming it', async () => {
  const replica = await spawnApi({ S3_ENDPOINT: 'http://127.0.0.1:9', TEMPORAL_ADDRESS: '127.0.0.1:9', SILICO_DEPENDENCY_TIMEOUT_SECONDS: '2' });
  try {
    const res = await fetch(`${replica.base.replace(/\/v1$/, '')}/readyz`);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.status, 'degraded');
    assert.deepEqual(body.failing.sort(), ['object_store', 'temporal']);
    assert.equal(body.checks.postgres, 'ok');
    assert.ok(['unavailable', 'timed_out'].includes(body.checks.temporal), body.checks.temporal);
    assert.ok(['unavailable', 'timed_out'].includes(body.checks.object_store), body.checks.object_store);
    assert.ok(!JSON.stringify(body).includes('127.0.0.1:9'), 'no raw error text (addresses, driver messages) in the answer');
    // What needs only Postgres is served; a run (its package from the store, its workflow from Temporal) answers 503 naming what it lacks.
    assert.equal((await call('GET', '/account', { base: replica.base })).status, 200);
    const run = await call('POST', '/runs', { base: replica.base, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/sir-epidemic@1.0.0', inputs: {}, max_runtime_seconds: 60 } });
    assert.equal(run.status, 503, run.text);
    assert.ok(['object_store', 'temporal'].includes(run.body.error.details.dependency), run.text);
    assert.ok(run.headers.get('retry-after'));
  } finally {
    await replica.stop();
  }
});

test('GET /readyz is 503 `unavailable` when Postgres cannot be reached: this replica can serve nothing', async () => {
  const replica = await spawnApi({ DATABASE_URL: 'postgres://silico@127.0.0.1:9/silico', SILICO_DEPENDENCY_TIMEOUT_SECONDS: '2' });
  try {
    const res = await fetch(`${replica.base.replace(/\/v1$/, '')}/readyz`);
    assert.equal(res.status, 503);
    const body = await res.json();
    assert.equal(body.status, 'unavailable');
    assert.deepEqual(body.failing, ['postgres']);
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

test('with an ops port, /metrics is served there and not on the public port', async () => {
  const metricsPort = await getPort();
  const replica = await spawnApi({ SILICO_METRICS_PORT: String(metricsPort) });
  try {
    const root = replica.base.replace(/\/v1$/, '');
    const pub = await fetch(`${root}/metrics`);
    assert.equal(pub.status, 404);
    assert.equal((await pub.json()).error.code, 'route_not_found');
    let ops: Response | undefined;
    for (let i = 0; i < 50 && !ops; i++) ops = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).catch(() => new Promise<undefined>((r) => setTimeout(() => r(undefined), 100)));
    assert.equal(ops!.status, 200);
    assert.match(await ops!.text(), /process_cpu_seconds_total/);
    assert.equal((await fetch(`http://127.0.0.1:${metricsPort}/v1/account`)).status, 404, 'the ops port serves nothing else');
  } finally {
    await replica.stop();
  }
});

/** Anonymous calls with a different X-Forwarded-For each: how many were rate limited. */
async function limitedWithForgedAddresses(base: string): Promise<number> {
  let limited = 0;
  for (let i = 0; i < 6; i++) {
    const res = await fetch(`${base}/account`, { headers: { 'X-Forwarded-For': `198.51.100.${i + 1}` } });
    if (res.status === 429) limited += 1;
  }
  return limited;
}

test('X-Forwarded-For is trusted only when the api is configured to sit behind a proxy', async () => {
  const direct = await spawnApi({ SILICO_RATE_READS_PER_MIN: '3' });
  try {
    assert.ok(await limitedWithForgedAddresses(direct.base) >= 3, 'a forged header does not escape the per-address limit');
  } finally {
    await direct.stop();
  }
  const proxied = await spawnApi({ SILICO_RATE_READS_PER_MIN: '3', SILICO_TRUSTED_PROXY_HOPS: '1' });
  try {
    assert.equal(await limitedWithForgedAddresses(proxied.base), 0, 'behind a proxy, the address it names is the client\'s');
  } finally {
    await proxied.stop();
  }
});

import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorOf, closeTestDb, newAccount, ownDatabase, spawnApi } from '../helpers.ts';

after(closeTestDb);

// Two api replicas with small limits share one Postgres: limits must hold across both.
const LIMITS = { SILICO_RATE_READS_PER_MIN: '6', SILICO_RATE_RUNS_PER_MIN: '2', SILICO_RATE_DAILY: '8' };
let a: Awaited<ReturnType<typeof spawnApi>>;
let b: Awaited<ReturnType<typeof spawnApi>>;
before(async () => {
  [a, b] = await Promise.all([spawnApi(LIMITS), spawnApi(LIMITS)]);
});
after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

test('RateLimit headers on every response, and the read bucket holds across two api processes', async () => {
  const { key } = await newAccount();
  const remaining: number[] = [];
  for (let i = 0; i < 6; i++) {
    const res = await call('GET', '/account', { key, base: i % 2 ? b.base : a.base });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ratelimit-limit'), '6');
    assert.ok(Number(res.headers.get('ratelimit-reset')) <= 60);
    remaining.push(Number(res.headers.get('ratelimit-remaining')));
  }
  assert.deepEqual(remaining, [5, 4, 3, 2, 1, 0], 'one shared counter, whichever replica answers');
  const limited = await call('GET', '/account', { key, base: b.base });
  assert.equal(limited.status, 429);
  const e = errorOf(limited);
  assert.equal(e.code, 'rate_limited');
  assert.equal(e.type, 'rate_limit_error');
  const retry = Number(limited.headers.get('retry-after'));
  assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
  assert.equal(limited.headers.get('ratelimit-remaining'), '0');
  // Error responses carry the headers too.
  const notFound = await call('GET', '/nope', { key: (await newAccount()).key, base: a.base });
  assert.equal(notFound.status, 404);
  assert.ok(notFound.headers.get('ratelimit-limit'));
});

test('concurrent requests on two replicas: exactly the limit succeeds, each counted once', async () => {
  const { key } = await newAccount();
  const answers = await Promise.all(Array.from({ length: 14 }, (_, i) => call('GET', '/account', { key, base: i % 2 ? b.base : a.base })));
  const ok = answers.filter((r) => r.status === 200);
  assert.equal(ok.length, 6, answers.map((r) => r.status).join(','));
  assert.equal(answers.filter((r) => r.status === 429).length, 8);
  assert.deepEqual(ok.map((r) => Number(r.headers.get('ratelimit-remaining'))).sort(), [0, 1, 2, 3, 4, 5], 'each success saw its own position');
});

test('run creation has a tighter bucket than reads', async () => {
  const { key } = await newAccount();
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await call('POST', '/runs', { key, base: i % 2 ? b.base : a.base, body: { ref: 'platform/x' }, headers: { 'Idempotency-Key': crypto.randomUUID() } });
    statuses.push(res.status);
    if (i < 2) assert.equal(res.headers.get('ratelimit-limit'), '2');
  }
  assert.deepEqual(statuses.slice(0, 2).map((s) => s !== 429), [true, true]);
  assert.equal(statuses[2], 429);
  // Reads of the same key are still allowed.
  assert.equal((await call('GET', '/account', { key, base: a.base })).status, 200);
});

test('daily fair-use limit per key answers 429 rate_limited until the next UTC day', async () => {
  const { key } = await newAccount();
  // 8 per day: spread over both per-minute buckets (6 reads + 2 run creations) so neither trips first.
  const plan = ['GET', 'GET', 'GET', 'GET', 'GET', 'POST', 'GET', 'POST'];
  for (const m of plan) {
    const res = m === 'GET'
      ? await call('GET', '/account', { key, base: a.base })
      : await call('POST', '/runs', { key, base: b.base, body: { ref: 'x/y' }, headers: { 'Idempotency-Key': crypto.randomUUID() } });
    assert.notEqual(res.status, 429, 'within the daily allowance');
  }
  const over = await call('GET', '/account', { key, base: b.base });
  assert.equal(over.status, 429);
  assert.equal(errorOf(over).details.bucket, 'daily');
  const now = new Date();
  const toMidnight = (Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000;
  const retry = Number(over.headers.get('retry-after'));
  assert.ok(Math.abs(retry - toMidnight) < 5, `Retry-After ${retry} ≈ seconds to UTC midnight ${toMidnight}`);
});

test('a read counted while it runs and found past the limit answers the 429 alone: none of the read\'s headers or bytes, and the next read is counted first', async () => {
  const { key } = await newAccount();
  const form = new FormData();
  form.append('file', new Blob(['gene,count\nlacI,12\n']), 'counts.csv');
  const uploaded = await fetch(`${a.base}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  assert.equal(uploaded.status, 200);
  const fileId = ((await uploaded.json()) as { file_id: string }).file_id;
  // The rest of the minute's reads on one replica; the other has not seen this key.
  for (let i = 0; i < 5; i++) assert.equal((await call('GET', `/files/${fileId}/content`, { key, base: a.base })).status, 200);
  const over = await call('GET', `/files/${fileId}/content`, { key, base: b.base });
  assert.equal(over.status, 429, over.text);
  assert.equal(errorOf(over).code, 'rate_limited');
  assert.match(over.headers.get('content-type') ?? '', /application\/json/);
  for (const h of ['etag', 'content-disposition', 'accept-ranges']) assert.equal(over.headers.get(h), null, `no ${h} from the read`);
  assert.equal(over.headers.get('ratelimit-remaining'), '0');
  const again = await call('GET', `/files/${fileId}/content`, { key, base: b.base });
  assert.equal(again.status, 429);
});

test('an api process counting alone (a database of its own) holds the same limits: positions in order, exactly the limit under concurrency, the 429 after', async () => {
  const own = await ownDatabase();
  const alone = await spawnApi({ ...LIMITS, DATABASE_URL: own.url });
  try {
    const { key } = await newAccount({ db: own.db });
    const remaining: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call('GET', '/account', { key, base: alone.base });
      assert.equal(res.status, 200);
      remaining.push(Number(res.headers.get('ratelimit-remaining')));
    }
    assert.deepEqual(remaining, [5, 4, 3]);
    const holding = await own.db('rate_counting').where({ scope: 'requests' }).first();
    assert.ok(holding?.holder, 'the process holds the counting of its scope');
    const answers = await Promise.all(Array.from({ length: 8 }, () => call('GET', '/account', { key, base: alone.base })));
    assert.equal(answers.filter((r) => r.status === 200).length, 3, answers.map((r) => r.status).join(','));
    assert.deepEqual(answers.filter((r) => r.status === 200).map((r) => Number(r.headers.get('ratelimit-remaining'))).sort(), [0, 1, 2]);
    const limited = answers.find((r) => r.status === 429)!;
    assert.equal(errorOf(limited).code, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  } finally {
    await alone.stop();
    await own.drop();
  }
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createPgPool } from '../../storage/db/knex.ts';
import { createCounters, LEASE_SHARE, type CounterRequest } from '../../storage/db/rateLimits.ts';
import { closeTestDb, testDb } from '../helpers.ts';

// Two sets of counters on their own pools stand for two api processes sharing Postgres.
const pools = [createPgPool(process.env.DATABASE_URL!, 2), createPgPool(process.env.DATABASE_URL!, 2)];
after(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await closeTestDb();
});

const stored = async (key: string): Promise<number> => {
  const row = await testDb()('rate_limits').where({ key }).first('points');
  return row ? Number(row.points) : 0;
};
const counter = (limit: number | undefined, windowMs = 60_000): CounterRequest => ({ key: `test-lease:${randomUUID()}`, windowMs, ...(limit === undefined ? {} : { limit }) });

/** `n` requests of one event-loop turn, at `now`: their positions. */
const turn = async (counters: ReturnType<typeof createCounters>, c: CounterRequest, n: number, now: number) =>
  (await Promise.all(Array.from({ length: n }, () => counters.increment([c], now)))).map((s) => s[0]!.count);

test('a busy counter is leased ahead: its next requests take positions with no statement, each once and in order', async () => {
  const counters = createCounters(pools[0]!);
  const c = counter(100_000);
  const t0 = Date.now();
  assert.deepEqual(await turn(counters, c, 5, t0), [1, 2, 3, 4, 5]);
  assert.equal(await stored(c.key), 5, 'a counter first seen is counted exactly');
  assert.equal(counters.take([c], t0), undefined, 'nothing leased yet');
  // Ten more a millisecond later: a demand of thousands a second, so the process leases ahead.
  assert.deepEqual(await turn(counters, c, 10, t0 + 1), [6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
  const afterLease = await stored(c.key);
  assert.ok(afterLease > 15, `positions leased beyond the requests (${afterLease})`);
  assert.ok(afterLease - 15 <= LEASE_SHARE * 100_000, 'at most the lease share of what remains');
  const positions: number[] = [];
  for (let s = counters.take([c], t0 + 2); s; s = counters.take([c], t0 + 2)) positions.push(s[0]!.count);
  assert.deepEqual(positions, Array.from({ length: afterLease - 15 }, (_, i) => 16 + i), 'the lease hands out its positions in order');
  assert.equal(await stored(c.key), afterLease, 'taken from the lease without a statement');
  assert.deepEqual(await turn(counters, c, 1, t0 + 3), [afterLease + 1], 'a spent lease is counted again');
});

test('near its limit, or asked for rarely, a counter leases nothing and is counted exactly', async () => {
  const counters = createCounters(pools[0]!);
  const small = counter(6);
  const t0 = Date.now();
  for (let i = 1; i <= 8; i++) {
    assert.deepEqual(await turn(counters, small, 1, t0 + i), [i]);
    assert.equal(await stored(small.key), i, 'a limit of 6 has no share to lease');
  }
  const rare = counter(100_000);
  for (let i = 1; i <= 4; i++) {
    assert.deepEqual(await turn(counters, rare, 1, t0 + i * 1_000), [i]);
    assert.equal(await stored(rare.key), i, 'one request a second leases nothing');
  }
  const unlimited = counter(undefined);
  await turn(counters, unlimited, 5, t0);
  await turn(counters, unlimited, 10, t0 + 1);
  assert.equal(await stored(unlimited.key), 15, 'a counter without a limit is never leased');
});

test('a lease ends with its window: the next request starts the new window at 1', async () => {
  const counters = createCounters(pools[0]!);
  const c = counter(100_000, 1_000);
  const t0 = Date.now();
  await turn(counters, c, 5, t0);
  await turn(counters, c, 10, t0 + 1);
  assert.ok(counters.take([c], t0 + 2), 'leased within the window');
  assert.equal(counters.take([c], t0 + 1_000), undefined, 'not past it');
  assert.deepEqual(await turn(counters, c, 2, t0 + 1_001), [1, 2]);
});

test('two processes leasing one counter never admit more than its limit, and no position is handed out twice', async () => {
  const limit = 2_000;
  const c = counter(limit);
  const processes = pools.map((p) => createCounters(p));
  const t0 = Date.now();
  const positions: number[] = [];
  // Each process in turns of 20 requests a millisecond apart, until both are refused whole turns.
  let ahead = 0;
  for (let ms = 0, refused = false; !refused; ms++) {
    assert.ok(ms < 1_000, 'the limit is reached');
    const turns = await Promise.all(processes.map((counters) => turn(counters, c, 20, t0 + ms)));
    positions.push(...turns.flat());
    ahead = Math.max(ahead, await stored(c.key) - positions.length);
    refused = turns.every((t) => t.every((p) => p > limit));
  }
  assert.equal(new Set(positions).size, positions.length, 'each position once');
  assert.ok(ahead > 0, 'the processes leased ahead');
  // Each process draws its leases in order and asked until it was refused whole turns, so
  // neither holds a position under the limit unused: exactly the limit was admitted.
  assert.equal(positions.filter((p) => p <= limit).length, limit);
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createPgPool } from '../../storage/db/knex.ts';
import { createCounters, LEASE_MS, LEASE_SHARE, type CounterRequest, type Counters } from '../../storage/db/rateCounters.ts';
import { closeTestDb, testDb } from '../helpers.ts';

// Sets of counters on their own pools stand for api processes sharing Postgres.
const pools = [createPgPool(process.env.DATABASE_URL!, 2), createPgPool(process.env.DATABASE_URL!, 2)];
after(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await closeTestDb();
});

const row = async (key: string): Promise<{ points: number; leases: number }> => {
  const r = await testDb()('rate_limits').where({ key }).first('points', 'leases');
  return r ? { points: Number(r.points), leases: Number(r.leases) } : { points: 0, leases: 0 };
};
const stored = async (key: string): Promise<number> => (await row(key)).points;
const counter = (limit: number | undefined, windowMs = 60_000): CounterRequest => ({ key: `test-lease:${randomUUID()}`, windowMs, ...(limit === undefined ? {} : { limit }) });

/** `n` requests of one event-loop turn, at `now`: their positions. */
const turn = async (counters: Counters, c: CounterRequest, n: number, now?: number) =>
  (await Promise.all(Array.from({ length: n }, () => counters.increment([c], now)))).map((s) => s[0]!.count);

/** Waits until a counter's row says no lease is outstanding (its holders gave theirs back). */
async function settled(key: string): Promise<void> {
  for (const started = Date.now(); (await row(key)).leases > 0;) {
    assert.ok(Date.now() - started < 5_000, 'every lease is given back');
    await sleep(10);
  }
}

test('a busy counter is leased ahead: its next requests take positions with no statement, in order; its unused positions are given back when it ends', async () => {
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
  assert.equal((await row(c.key)).leases, 1, 'the lease is counted among the counter\'s outstanding ones');
  const positions: number[] = [];
  for (let i = 0; i < 7; i++) positions.push(counters.take([c], t0 + 2)![0]!.count);
  assert.deepEqual(positions, [16, 17, 18, 19, 20, 21, 22], 'the lease hands out its positions in order');
  assert.equal(await stored(c.key), afterLease, 'taken from the lease without a statement');
  assert.equal(counters.take([c], Math.max(Date.now(), t0 + 1) + LEASE_MS), undefined, 'a lease lasts LEASE_MS');
  await settled(c.key);
  assert.equal(await stored(c.key), 22, 'once it has ended its unused positions are given back');
  assert.deepEqual(await turn(counters, c, 1), [23], 'and the next request is counted after the last one used');
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
  const c = counter(100_000, 50);
  const t0 = Date.now();
  await turn(counters, c, 5, t0);
  await turn(counters, c, 10, t0 + 1);
  assert.ok(counters.take([c], t0 + 2), 'leased within the window');
  assert.equal(counters.take([c], t0 + 50), undefined, 'not past it');
  assert.deepEqual(await turn(counters, c, 2, t0 + 51), [1, 2]);
  await settled(c.key);
  assert.equal(await stored(c.key), 2, 'the old window\'s lease given back leaves the new window\'s count alone');
});

test('requests over two processes admit exactly the limit: past it, a request waits for the other process\'s lease to end before it is refused', async () => {
  const limit = 600;
  const c = counter(limit);
  const [a, b] = pools.map((p) => createCounters(p)) as [Counters, Counters];
  // One process's burst makes it lease ahead, then its demand stops with the lease unused.
  const t0 = Date.now();
  const first = [...await turn(b, c, 5, t0), ...await turn(b, c, 10, t0 + 1)];
  const leased = await stored(c.key) - 15;
  assert.ok(leased > 0 && (await row(c.key)).leases === 1, `the first process holds a lease (${leased} positions)`);
  // The other asks for the rest and more, in waves a millisecond apart: the first's
  // positions are counted until its lease ends, then given back, and the waiting requests get them.
  const waves: Promise<number[]>[] = [];
  for (let w = 0; w < 11; w++) {
    waves.push(turn(a, c, 55));
    await sleep(1);
  }
  const rest = (await Promise.all(waves)).flat();
  assert.equal([...first, ...rest].filter((p) => p <= limit).length, limit, 'exactly the limit admitted');
  await settled(c.key);
  assert.equal(await stored(c.key), 620, 'every lease given back: the count is every request once');
});

test('a lease whose process died is waited for no longer than its end and a grace, then the request is refused', async () => {
  const counters = createCounters(pools[0]!);
  const c = counter(3);
  await turn(counters, c, 3);
  // Another process's lease of the counter, never to be given back.
  await testDb()('rate_limits').where({ key: c.key }).update({ leases: 1, lease_until: Date.now() + 50 });
  const started = Date.now();
  assert.deepEqual(await turn(counters, c, 1), [4], 'refused once the dead lease is past its grace');
  const waited = Date.now() - started;
  assert.ok(waited >= 50 && waited < 5_000, `waited ${waited} ms (the lease's end and a grace of 2 s, no more)`);
  assert.equal(await stored(c.key), 4, 'a request that waited is counted once');
});

test('counters drawn together by different requests (two buckets and their shared daily count) leave no lease behind', async () => {
  const counters = createCounters(pools[0]!);
  const [reads, runs, daily] = [counter(100_000), counter(100_000), counter(100_000)];
  const waves: Promise<unknown>[] = [];
  for (let w = 0; w < 20; w++) {
    for (let i = 0; i < 10; i++) waves.push(counters.increment([reads, daily]), counters.increment([runs, daily]));
    await sleep(1);
  }
  await Promise.all(waves);
  for (const c of [reads, runs, daily]) await settled(c.key);
  assert.deepEqual(await Promise.all([reads, runs, daily].map((c) => stored(c.key))), [200, 200, 400], 'each counted every request once, every lease given back');
});

test('a process closing gives back the leases it holds at once', async () => {
  const counters = createCounters(pools[1]!);
  const c = counter(100_000);
  const t0 = Date.now();
  await turn(counters, c, 5, t0);
  await turn(counters, c, 10, t0 + 1);
  assert.equal((await row(c.key)).leases, 1, 'leased');
  await counters.close();
  assert.deepEqual(await row(c.key), { points: 15, leases: 0 });
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { closeTestDb, testDb, until } from '../helpers.ts';
import { createPgPool } from '../../storage/db/knex.ts';
import { createScopeCounters, type ScopeCountingOptions } from '../../storage/db/rateCounting.ts';
import { createCounters, NOT_COUNTED } from '../../storage/db/rateLimits.ts';
import { newUuid } from '../../storage/ids.ts';

// Each "process" is a pool and a set of counters of its own on the stack's Postgres; each
// test counts a scope and keys of its own, so the stack's api (scope `requests`) is untouched.
const pools: pg.Pool[] = [];
after(async () => {
  await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
  await closeTestDb();
});

/** A pool on the stack's Postgres whose statements' names are recorded in `sent`. */
function recordedPool(sent: string[]): pg.Pool {
  const pool = createPgPool(globalThis.process.env.DATABASE_URL!, 4);
  pools.push(pool);
  const query = pool.query.bind(pool) as (...a: unknown[]) => Promise<unknown>;
  (pool as { query: unknown }).query = (q: { name?: string }, ...rest: unknown[]) => {
    sent.push(q?.name ?? 'unnamed');
    return query(q, ...rest);
  };
  return pool;
}

/** A process's counters (its ticks on a pool of their own), and the names of the statements it sent. */
function process(opts: ScopeCountingOptions) {
  const sent: string[] = [];
  const pool = recordedPool(sent);
  const ticks = recordedPool(sent);
  return { pool, ticks, sent, counters: createScopeCounters(pool, { ticks, ...opts }) };
}

const minute = (key: string) => [{ key, windowMs: 60_000 }];
const stored = async (key: string) => Number((await testDb()('rate_limits').where({ key }).first())?.points ?? 0);

test('a process counting alone counts in its memory: no statement per count, every position exact, the counts written behind', async () => {
  const scope = `test-${newUuid()}`;
  const key = `reads:${newUuid()}`;
  const a = process({ scope });
  const positions: number[] = [];
  for (let burst = 0; burst < 20; burst++) {
    const counted = await Promise.all(Array.from({ length: 50 }, () => a.counters.increment(minute(key))));
    positions.push(...counted.map((c) => c[0]!.count));
  }
  assert.equal(a.counters.role(), 'alone');
  assert.deepEqual(positions, Array.from({ length: 1000 }, (_, i) => i + 1));
  assert.equal(a.sent.filter((n) => n.startsWith('silico-rate-increment')).length, 0, 'no count went to Postgres one by one');
  assert.equal(a.sent.filter((n) => n === 'silico-rate-read').length, 1, 'the key was read once');
  // At hand, a count is made at once; a key not in memory is not counted that way.
  assert.equal(a.counters.incrementNow!(minute(key))![0]!.count, 1001);
  assert.equal(a.counters.incrementNow!(minute(`reads:${newUuid()}`)), undefined);
  // Written behind, at its ticks.
  await until(5000, async () => ((await stored(key)) === 1001 ? true : undefined));
  await a.counters.close();
  assert.equal(await stored(key), 1001);
  const row = await testDb()('rate_counting').where({ scope }).first();
  assert.equal(row.holder, null, 'closing gives the scope up');
});

test('processes joining and leaving: every count has its own position, none skipped, whoever counts it', async () => {
  const scope = `test-${newUuid()}`;
  const key = `reads:${newUuid()}`;
  const a = process({ scope });
  const b = process({ scope });
  const positions: number[] = [];
  const roles = { a: new Set<string>(), b: new Set<string>() };
  const burst = async (who: 'a' | 'b', n: number) => {
    const p = who === 'a' ? a : b;
    const counted = await Promise.all(Array.from({ length: n }, () => p.counters.increment(minute(key))));
    positions.push(...counted.map((c) => c[0]!.count));
    roles[who].add(p.counters.role());
  };
  // A alone; then B joins and both count at once; then A leaves and B counts on alone.
  for (let i = 0; i < 10; i++) await burst('a', 20);
  for (let round = 0; round < 30 || !(roles.a.has('shared') && roles.b.has('shared')); round++) {
    assert.ok(round < 3000, 'both came to count in Postgres');
    await Promise.all([burst('a', 10), burst('b', 10)]);
  }
  await a.counters.close();
  for (let round = 0; b.counters.role() !== 'alone'; round++) {
    assert.ok(round < 300, 'b came to count alone once a had left');
    await burst('b', 20);
    await new Promise((r) => setTimeout(r, 30));
  }
  await burst('b', 20);
  await b.counters.close();
  const n = positions.length;
  assert.deepEqual(positions.sort((x, y) => x - y), Array.from({ length: n }, (_, i) => i + 1));
  assert.equal(await stored(key), n);
  assert.ok(roles.a.has('alone') && roles.a.has('shared'), `a counted ${[...roles.a]}`);
  assert.ok(roles.b.has('shared') && roles.b.has('alone'), `b counted ${[...roles.b]}`);
  assert.ok(b.sent.includes('silico-rate-increment-scoped'), 'with another process counting, counts go to Postgres');
});

test('a holder cut off from Postgres: the next process waits out its lease and grace (longer than it takes to go idle), then counts on from what it wrote', async () => {
  const scope = `test-${newUuid()}`;
  const key = `reads:${newUuid()}`;
  const opts = { scope, leaseMs: 600, graceMs: 900 };
  const a = process(opts);
  for (let i = 0; i < 30; i++) await a.counters.increment(minute(key));
  await until(5000, async () => ((await stored(key)) === 30 ? true : undefined));
  await Promise.all([a.pool.end(), a.ticks.end()]);
  const cutAt = Date.now();
  assert.ok((await testDb()('rate_counting').where({ scope }).first()).holder, 'the holder was cut off holding');
  const b = process({ ...opts, idleMs: 300 });
  const [next] = await b.counters.increment(minute(key));
  const waited = Date.now() - cutAt;
  assert.equal(next!.count, 31);
  assert.equal(b.counters.role(), 'alone');
  // A's last tick was at most a tick before the cut: B cannot have counted before its grace.
  assert.ok(waited >= opts.graceMs, `counted ${waited} ms after the holder was cut off`);
  await b.counters.close();
});

test('a process left idle leaves the scope, so another counts alone', async () => {
  const scope = `test-${newUuid()}`;
  const key = `reads:${newUuid()}`;
  const a = process({ scope, idleMs: 300 });
  const b = process({ scope, idleMs: 300 });
  const positions: number[] = [];
  const one = async (p: typeof a) => {
    positions.push((await p.counters.increment(minute(key)))[0]!.count);
  };
  const pause = () => new Promise((r) => setTimeout(r, 20));
  for (let round = 0; !(a.counters.role() === 'shared' && b.counters.role() === 'shared'); round++) {
    assert.ok(round < 500, 'both came to count in Postgres');
    await Promise.all([one(a), one(b)]);
    await pause();
  }
  // B goes quiet; A counts on and is soon alone.
  for (let round = 0; a.counters.role() !== 'alone'; round++) {
    assert.ok(round < 500, 'a came to count alone once b was idle');
    await one(a);
    await pause();
  }
  assert.equal(b.counters.role(), 'none');
  await one(b);
  const n = positions.length;
  assert.deepEqual(positions.sort((x, y) => x - y), Array.from({ length: n }, (_, i) => i + 1));
  await Promise.all([a.counters.close(), b.counters.close()]);
  assert.equal(await stored(key), n);
});

test('a count sent to Postgres while another process holds the scope is refused there, and counted once it is given up', async () => {
  const scope = `test-${newUuid()}`;
  const key = `reads:${newUuid()}`;
  const a = process({ scope });
  await a.counters.increment(minute(key));
  assert.equal(a.counters.role(), 'alone');
  // What a process stalled past its membership would send late: Postgres refuses it.
  const late = createCounters(recordedPool([]), { scope });
  await assert.rejects(late.increment(minute(key)), (err) => err === NOT_COUNTED);
  await a.counters.close();
  const [after] = await late.increment(minute(key));
  assert.equal(after!.count, 2, 'the holder wrote its count as it gave the scope up; the late one comes after it');
});

test('a closed process refuses counts', async () => {
  const a = process({ scope: `test-${newUuid()}` });
  await a.counters.increment(minute(`reads:${newUuid()}`));
  await a.counters.close();
  await assert.rejects(a.counters.increment(minute(`reads:${newUuid()}`)), /closed/);
});

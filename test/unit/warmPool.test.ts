import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createWarmPool, PoolClosed } from '../../activities/execution/warmPool.ts';
import type { WarmInstance } from '../../activities/execution/warmInstance.ts';

// The pool's own bookkeeping, with instances that only record what is done to them (the
// real ones are exercised by test/integration/warmInstance.test.ts).
function fakes() {
  const made: Array<WarmInstance & { dead: boolean; closed: boolean }> = [];
  const start = async () => {
    await sleep(20);
    const i = {
      pid: made.length + 1, startSeconds: 0.02, dead: false, closed: false,
      alive() { return !this.dead && !this.closed; },
      async invoke() { throw new Error('not used'); },
      async close() { this.closed = true; },
    };
    made.push(i);
    return i;
  };
  return { made, start };
}

test('keeps min warm, grows to max under load, queues past max first come first served, and shrinks back when idle', async () => {
  const { made, start } = fakes();
  const pool = createWarmPool({ start, min: 1, max: 2, idleSeconds: 0.3 });
  await sleep(60);
  assert.equal(made.length, 1, 'min instances started at once');
  const a = await pool.acquire();
  const b = await pool.acquire();
  assert.equal(made.length, 2);
  assert.notEqual(a.instance, b.instance, 'one invocation per instance');
  const order: string[] = [];
  const c = pool.acquire().then((l) => { order.push('c'); return l; });
  const d = pool.acquire().then((l) => { order.push('d'); return l; });
  await sleep(60);
  assert.equal(made.length, 2, 'never more than max');
  assert.equal(pool.stats().waiting, 2);
  a.release();
  const lc = await c;
  assert.equal(lc.instance, a.instance);
  b.release();
  const ld = await d;
  assert.deepEqual(order, ['c', 'd']);
  lc.release();
  ld.release();
  await sleep(1200);
  assert.equal(pool.stats().instances, 1, 'back to min once idle');
  assert.equal(made.filter((m) => m.closed).length, 1);
  await pool.close();
});

test('an instance that dies is replaced to keep min; close refuses waiters and stops every instance', async () => {
  const { made, start } = fakes();
  const pool = createWarmPool({ start, min: 1, max: 1, idleSeconds: 0.2 });
  const first = await pool.acquire();
  made[0]!.dead = true;
  first.release();
  await sleep(100);
  assert.equal(made.length, 2, 'replaced');
  const second = await pool.acquire();
  assert.equal(second.instance, made[1]);
  const waiter = pool.acquire();
  await pool.close();
  await assert.rejects(waiter, PoolClosed);
  assert.ok(made[1]!.closed);
  await assert.rejects(pool.acquire(), PoolClosed);
});

test('a caller that gives up leaves the queue; one whose instance cannot start is told why', async () => {
  const { start } = fakes();
  const pool = createWarmPool({ start, min: 0, max: 1, idleSeconds: 1 });
  const held = await pool.acquire();
  const abort = new AbortController();
  const gaveUp = pool.acquire(abort.signal);
  abort.abort();
  await assert.rejects(gaveUp, /cancelled/);
  assert.equal(pool.stats().waiting, 0);
  held.release();
  await pool.close();
  const broken = createWarmPool({ start: async () => { throw new Error('package_invalid'); }, min: 0, max: 1, idleSeconds: 1 });
  await assert.rejects(broken.acquire(), /package_invalid/);
  await broken.close();
});

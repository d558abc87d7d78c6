import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { createWriteChain } from '../../activities/execution/writeChain.ts';
import { createEventBatcher } from '../../activities/execution/eventBatcher.ts';
import { createDb } from '../../storage/db/knex.ts';

/** Collects the rejections nobody handled while `body` runs (each would end a worker process). */
async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const hear = (reason: unknown) => seen.push(reason);
  process.on('unhandledRejection', hear);
  try {
    await body();
    // Node reports an unhandled rejection after the microtasks of the turn it happened in.
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('unhandledRejection', hear);
  }
  return seen;
}

test('a chain runs its writes in order, keeps going after a failure, and settles with the first failure', async () => {
  const chain = createWriteChain();
  const done: number[] = [];
  const unhandled = await unhandledDuring(async () => {
    chain.add(async () => { done.push(1); });
    chain.add(async () => { throw new Error('first'); });
    chain.add(async () => { done.push(3); });
    chain.add(async () => { throw new Error('second'); });
    // Nobody awaits yet: the failures must wait, handled, for settled().
    await new Promise((r) => setTimeout(r, 20));
  });
  assert.deepEqual(unhandled, []);
  assert.deepEqual(done, [1, 3]);
  await assert.rejects(chain.settled(), /first/);
});

test('a chain with nothing failed settles once every write queued so far has ended, one at a time', async () => {
  const chain = createWriteChain();
  const done: string[] = [];
  let inFlight = 0;
  const write = (name: string, ms: number) => async () => {
    inFlight += 1;
    assert.equal(inFlight, 1, 'one write at a time');
    await new Promise((r) => setTimeout(r, ms));
    inFlight -= 1;
    done.push(name);
  };
  chain.add(write('slow', 30));
  chain.add(write('quick', 1));
  await chain.settled();
  assert.deepEqual(done, ['slow', 'quick'], 'in the order queued, both ended before settled()');
  chain.add(write('later', 5));
  await chain.settled();
  assert.deepEqual(done, ['slow', 'quick', 'later']);
});

test('a run\'s events whose write fails while Postgres is away leave no unhandled rejection; flushed() reports the failure', async () => {
  // A port nothing listens on: every connection is refused, as while Postgres is down.
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as { port: number }).port;
      srv.close(() => resolve(p));
    });
  });
  const db = createDb(`postgres://silico@127.0.0.1:${port}/silico`, { timeoutMs: 500 });
  try {
    const events = createEventBatcher(db, '00000000-0000-0000-0000-000000000000');
    const unhandled = await unhandledDuring(async () => {
      events.add('log', 'a line', {});
      // The write fails within the acquire deadline; only later does anyone ask about it.
      await new Promise((r) => setTimeout(r, 1000));
      events.add('log', 'another line', {});
      await new Promise((r) => setTimeout(r, 1000));
    });
    assert.deepEqual(unhandled, []);
    await assert.rejects(events.flushed(), /ECONNREFUSED|Timeout/i);
  } finally {
    await db.destroy();
  }
});

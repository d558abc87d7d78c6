import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { createWarmParents } from '../../activities/execution/warmParents.ts';
import { parentKey } from '../../activities/execution/runParents.ts';
import type { WarmInstance } from '../../activities/execution/warmInstance.ts';

// The registry's bookkeeping, with parents that only record what is done to them (real
// ones fork real runs in test/integration/sandbox.test.ts and chaos.test.ts).
type Fake = WarmInstance & { key: string; closed: boolean };
function fakes() {
  const made: Fake[] = [];
  const starter = (key: string) => async (): Promise<Fake> => {
    await sleep(10);
    const p: Fake = {
      key, pid: made.length + 1, startSeconds: 0.01, closed: false,
      alive() { return !this.closed; },
      async invoke() { throw new Error('not used'); },
      async close() { this.closed = true; },
    };
    made.push(p);
    return p;
  };
  return { made, starter };
}

test("a key's runs fork from that key's parents alone, reused once released, up to its bound at once", async () => {
  const { made, starter } = fakes();
  const parents = createWarmParents<Fake>({ max: 8, perKey: 2, idleSeconds: 60, coldSeconds: 60 });
  const a1 = (await parents.lease('a', starter('a')))!;
  const a2 = (await parents.lease('a', starter('a')))!;
  const b1 = (await parents.lease('b', starter('b')))!;
  assert.deepEqual([a1, a2, b1].map((l) => l.instance.key), ['a', 'a', 'b']);
  assert.notEqual(a1.instance, a2.instance, 'one run per parent at a time');
  const third = parents.lease('a', starter('a'));
  await sleep(50);
  assert.equal(made.length, 3, 'never more than perKey parents of a key');
  a1.release();
  assert.equal((await third)!.instance, a1.instance, 'the next run of the key waits for, and reuses, a released parent');
  b1.release();
  const again = (await parents.lease('b', starter('b')))!;
  assert.equal(again.instance, b1.instance);
  assert.deepEqual(parents.stats(), { parents: 3, busy: 3, keys: 2 });
  await parents.close();
  assert.ok(made.every((p) => p.closed), 'closing stops every parent');
});

test('at the worker bound, the longest-idle parent of another key makes room; with none idle, the run goes cold', async () => {
  const { made, starter } = fakes();
  const parents = createWarmParents<Fake>({ max: 2, perKey: 2, idleSeconds: 60, coldSeconds: 60 });
  const a = (await parents.lease('a', starter('a')))!;
  const b = (await parents.lease('b', starter('b')))!;
  assert.equal(await parents.lease('c', starter('c')), null, 'both busy: cold');
  b.release();
  await sleep(5);
  a.release();
  const c = (await parents.lease('c', starter('c')))!;
  assert.equal(c.instance.key, 'c');
  assert.equal(made.find((p) => p.key === 'b')!.closed, true, 'the longest idle (b) was stopped');
  assert.equal(made.find((p) => p.key === 'a')!.closed, false);
  assert.equal(parents.stats().parents, 2);
  c.release();
  await parents.close();
});

test('a key whose parent fails to start runs cold for a while, without starting one per run', async () => {
  let tries = 0;
  const parents = createWarmParents<Fake>({ max: 4, perKey: 2, idleSeconds: 60, coldSeconds: 0.2 });
  const failing = async (): Promise<Fake> => {
    tries += 1;
    throw new Error('package_invalid');
  };
  assert.equal(await parents.lease('x', failing), null);
  assert.equal(await parents.lease('x', failing), null);
  assert.equal(tries, 1, 'cold without another start');
  await sleep(300);
  assert.equal(await parents.lease('x', failing), null);
  assert.equal(tries, 2, 'tried again once the cold spell is over');
  await parents.close();
});

test('no parents at all (max 0): every run is cold; a lease given up on its signal rejects', async () => {
  const { made, starter } = fakes();
  const none = createWarmParents<Fake>({ max: 0, perKey: 2, idleSeconds: 60, coldSeconds: 60 });
  assert.equal(await none.lease('a', starter('a')), null);
  assert.equal(made.length, 0);
  await none.close();
  const parents = createWarmParents<Fake>({ max: 4, perKey: 1, idleSeconds: 60, coldSeconds: 60 });
  const held = (await parents.lease('a', starter('a')))!;
  const stop = new AbortController();
  const waiting = parents.lease('a', starter('a'), stop.signal);
  stop.abort();
  await assert.rejects(waiting);
  held.release();
  await parents.close();
});

test("a run's key names its account, profile, environment and lab, so no two accounts share a parent", () => {
  const run = { account_id: 'acct_1', compute_profile: 'cpu-small', runtime_sha256: 'ab'.repeat(32), kind: 'hub' as const, package_sha256: 'cd'.repeat(32), revision_id: null };
  const key = parentKey(run);
  assert.notEqual(parentKey({ ...run, account_id: 'acct_2' }), key);
  assert.notEqual(parentKey({ ...run, compute_profile: 'cpu-standard' }), key);
  assert.notEqual(parentKey({ ...run, runtime_sha256: 'ef'.repeat(32) }), key);
  assert.notEqual(parentKey({ ...run, package_sha256: 'ef'.repeat(32) }), key);
  assert.notEqual(parentKey({ ...run, kind: 'managed', revision_id: 'rev_1' }), parentKey({ ...run, kind: 'managed', revision_id: 'rev_2' }));
});

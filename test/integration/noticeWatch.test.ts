import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { closeTestDb, newAccount, newRunRow, testDb } from '../helpers.ts';
import { appendEvent, insertAcceptedRun } from '../../storage/db/runs.ts';
import { createNotificationListener, type NotificationListener } from '../../storage/db/notifications.ts';
import { RUN_EVENTS_CHANNEL, createNoticeWatcher, type NoticeWatcher } from '../../storage/db/noticeWatch.ts';

// Far longer than a notice takes, far shorter than the wait: `next` answering true
// before it means a notice woke it, not the clock.
const LONG = 20_000;

let listener: NotificationListener;
let watcher: NoticeWatcher;
let runId = '';
before(async () => {
  listener = await createNotificationListener(process.env.DATABASE_URL!, [RUN_EVENTS_CHANNEL], { reconnectMs: 100 });
  watcher = createNoticeWatcher(listener, RUN_EVENTS_CHANNEL);
  // A run accepted and never started (no workflow): it takes events until it ends.
  const owner = await newAccount({ usd: 1 });
  runId = (await insertAcceptedRun(testDb(), newRunRow(owner.account.id))).id;
});
after(async () => {
  await listener?.close();
  await closeTestDb();
});

const timed = async (p: Promise<boolean>) => {
  const t = Date.now();
  return { woke: await p, ms: Date.now() - t };
};

test("an appended event wakes that run's followers only, even when appended before they wait", async () => {
  const mine = watcher.subscribe(runId);
  const other = watcher.subscribe('00000000-0000-0000-0000-000000000000');
  try {
    const waiting = timed(mine.next(LONG));
    await appendEvent(testDb(), runId, 'log', 'woken by the insert trigger');
    const r = await waiting;
    assert.equal(r.woke, true);
    assert.ok(r.ms < LONG / 2, `woke after ${r.ms} ms`);
    assert.equal(await other.next(300), false, 'another run is not woken');

    await appendEvent(testDb(), runId, 'log', 'appended between a read and the wait');
    await new Promise((res) => setTimeout(res, 200));
    assert.equal((await timed(mine.next(LONG))).woke, true, 'a notice that came first is kept for the next wait');
    assert.equal(await mine.next(200), false, 'and consumed by it');
  } finally {
    mine.close();
    other.close();
  }
});

test('a dropped listening connection wakes every follower, and the listener comes back', async () => {
  const sub = watcher.subscribe(runId);
  try {
    const waiting = timed(sub.next(LONG));
    const killed = await testDb().raw(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query ILIKE 'LISTEN %silico_run_events%' AND pid <> pg_backend_pid()`);
    assert.ok(killed.rows.length >= 1, 'found the listening backend');
    const r = await waiting;
    assert.equal(r.woke, true, 'woken: notices may have been missed');
    for (let i = 0; !listener.listening; i++) {
      assert.ok(i < 100, 'listening again within 10 s');
      await new Promise((res) => setTimeout(res, 100));
    }
    await sub.next(0); // the reconnection's own wake-up
    const again = timed(sub.next(LONG));
    await appendEvent(testDb(), runId, 'log', 'after the reconnection');
    assert.equal((await again).woke, true);
  } finally {
    sub.close();
  }
});

test('concurrent appends to one run get consecutive sequence numbers, none lost or repeated', async () => {
  const before = Number((await testDb()('runs').where({ id: runId }).first('event_seq')).event_seq);
  const seqs = await Promise.all(Array.from({ length: 40 }, (_, i) => appendEvent(testDb(), runId, 'log', `concurrent ${i}`)));
  assert.deepEqual([...seqs].sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => before + i + 1));
  const stored = await testDb()('run_events').where({ run_id: runId }).andWhere('seq', '>', before).orderBy('seq').pluck('seq');
  assert.deepEqual(stored, [...seqs].sort((a, b) => a - b));
  await assert.rejects(appendEvent(testDb(), '00000000-0000-0000-0000-000000000000', 'log', 'no such run'), /no run/);
});

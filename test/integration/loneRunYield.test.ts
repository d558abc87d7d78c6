import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { closeTestDb, newAccount, newRunRow, testDb } from '../helpers.ts';
import { createBatchActivities, type BatchResult } from '../../activities/execution/batch.ts';
import { createNotificationListener } from '../../storage/db/notifications.ts';
import { createLoneRunWatch, LONE_RUNS_CHANNEL } from '../../storage/db/loneRunWatch.ts';
import { insertAcceptedRun } from '../../storage/db/runs.ts';
import { computeTaskQueue } from '../../kernel/workflowNames.ts';

// Fair under load: a study's batch gives its slot back after the run it is at when a run
// is accepted on its own on the batch's compute queue (migration 053's notice), instead of
// at the end of its budget. Real Postgres, its trigger and the worker's listener; the
// lab's execution is stubbed.

after(closeTestDb);

test('a batch runs to its budget while no lone run comes, and gives its slot back after one run once a lone run is accepted on its queue', { timeout: 60_000 }, async () => {
  const db = testDb();
  const owner = await newAccount({ usd: 100 });
  const profile = `test-yield-${crypto.randomUUID().slice(0, 8)}`;
  await db('compute_profiles').insert({ id: profile, title: 'yield test', kind: 'cpu', vcpus: 1, memory_mib: 256, gpu: null, price_per_second_micros: 1, max_runtime_seconds: 60, schedule_to_start_seconds: 60, sort: 99 });
  const listener = await createNotificationListener(process.env.DATABASE_URL!, [LONE_RUNS_CHANNEL]);
  try {
    const loneRuns = createLoneRunWatch(listener);
    const study = async (n: number) => {
      const runs = [];
      for (let i = 0; i < n; i++) runs.push(await insertAcceptedRun(db, newRunRow(owner.account.id, { compute_profile: profile, experiment_id: null })));
      return runs.map((r) => r.id);
    };
    const executed: string[] = [];
    const batches = createBatchActivities({
      db, maxConcurrentRuns: 100, loneRuns,
      executeRun: async (runId) => {
        executed.push(runId);
        await new Promise((r) => setTimeout(r, 20));
        return { status: 'completed', computeSeconds: 0.02 };
      },
    });
    const env = new MockActivityEnvironment({ taskQueue: computeTaskQueue(profile) });
    // The batch's runs are made before the watch is asked: their own acceptance is a lone
    // run's here (the test has no study), so its window is let pass first.
    const ids = await study(6);
    await new Promise((r) => setTimeout(r, 1100));
    const whole = await env.run(batches.executeRuns, { runIds: ids, budgetSeconds: 30 }) as BatchResult;
    assert.deepEqual(whole.left, [], 'no lone run came: the batch ran to its end');
    assert.equal(whole.completed, 6);

    const more = await study(6);
    await new Promise((r) => setTimeout(r, 1100));
    await insertAcceptedRun(db, newRunRow((await newAccount({ usd: 1 })).account.id, { compute_profile: profile }));
    for (const started = Date.now(); !loneRuns.acceptedWithin(computeTaskQueue(profile), 1000);) {
      assert.ok(Date.now() - started < 5000, 'the notice of the lone run reached the worker');
      await new Promise((r) => setTimeout(r, 10));
    }
    const yielded = await env.run(batches.executeRuns, { runIds: more, budgetSeconds: 30 }) as BatchResult;
    assert.equal(yielded.completed, 1, 'one run, then the slot given back');
    assert.deepEqual(yielded.left, more.slice(1), 'the rest given back, in order');
    assert.equal(loneRuns.acceptedWithin(computeTaskQueue('another-profile'), 1000), false, 'a lone run on another queue needs no slot of this one');
  } finally {
    await listener.close();
  }
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { closeTestDb, newAccount, newRunRow, testDb } from '../helpers.ts';
import { createBatchActivities, LONE_RUN_SETTLE_MS, type BatchResult } from '../../activities/execution/batch.ts';
import { createNotificationListener } from '../../storage/db/notifications.ts';
import { createLoneRunWatch, LONE_RUNS_CHANNEL } from '../../storage/db/loneRunWatch.ts';
import { insertAcceptedRun } from '../../storage/db/runs.ts';
import { computeTaskQueue } from '../../kernel/workflowNames.ts';

// Fair under load: a study's batch gives its slot back after the run it is at when a run
// is accepted on its own on the batch's compute queue (migration 053's notice), instead of
// at the end of its budget. Real Postgres, its trigger and the worker's listener; the
// lab's execution is stubbed.

after(closeTestDb);

test('a batch runs to its budget while no lone run comes, and gives its slot back a few runs after a lone run is accepted on its queue, once', { timeout: 60_000 }, async () => {
  const db = testDb();
  const owner = await newAccount({ usd: 100 });
  const profile = `test-yield-${crypto.randomUUID().slice(0, 8)}`;
  await db('compute_profiles').insert({ id: profile, title: 'yield test', kind: 'cpu', vcpus: 1, memory_mib: 256, gpu: null, price_per_second_micros: 1, max_runtime_seconds: 60, schedule_to_start_seconds: 60, sort: 99 });
  const listener = await createNotificationListener(process.env.DATABASE_URL!, [LONE_RUNS_CHANNEL]);
  try {
    const watch = createLoneRunWatch(listener);
    let heard = 0;
    let heardAt = 0;
    const hearing: Array<() => void> = [];
    listener.on(LONE_RUNS_CHANNEL, (p) => {
      if (p !== profile) return;
      heard++;
      heardAt = Date.now();
      for (const wake of hearing.splice(0)) wake();
    });
    // The batch's questions to the watch, each with its answer and when it was asked.
    const asked: Array<{ at: number; yes: boolean }> = [];
    const loneRuns = {
      acceptedSince: (q: string, since: number, settledMs: number) => {
        const yes = watch.acceptedSince(q, since, settledMs);
        asked.push({ at: Date.now(), yes });
        return yes;
      },
    };
    /** The batch's runs, made before it begins and heard by the watch before it begins. */
    const study = async (n: number) => {
      const until = heard + n;
      const runs = [];
      for (let i = 0; i < n; i++) runs.push(await insertAcceptedRun(db, newRunRow(owner.account.id, { compute_profile: profile, experiment_id: null })));
      while (heard < until) await new Promise<void>((wake) => hearing.push(wake));
      return runs.map((r) => r.id);
    };
    const executed: string[] = [];
    let duringRun: ((i: number) => Promise<void>) | undefined;
    const batches = createBatchActivities({
      db, maxConcurrentRuns: 100, loneRuns,
      executeRun: async (runId) => {
        executed.push(runId);
        await duringRun?.(executed.length);
        await new Promise((r) => setTimeout(r, 100));
        return { status: 'completed', computeSeconds: 0.1 };
      },
    });
    const queue = computeTaskQueue(profile);
    const env = new MockActivityEnvironment({ taskQueue: queue });
    // The batch's runs are made (and their notices heard) before it begins: their own
    // acceptance is a lone run's here (the test has no study), and what came before a batch
    // began is not its to give way to.
    const whole = await env.run(batches.executeRuns, { runIds: await study(6), budgetSeconds: 30 }) as BatchResult;
    assert.deepEqual(whole.left, [], 'no lone run came while it ran: the batch ran to its end');
    assert.equal(whole.completed, 6);

    // A lone run accepted on the queue during the batch's second run.
    const more = await study(10);
    executed.length = 0;
    const lone = await newAccount({ usd: 1 });
    duringRun = async (i) => {
      if (i === 2) await insertAcceptedRun(db, newRunRow(lone.account.id, { compute_profile: profile }));
    };
    asked.length = 0;
    const yielded = await env.run(batches.executeRuns, { runIds: more, budgetSeconds: 30 }) as BatchResult;
    // How many runs that is depends on how long each took (the machine's load), so what is
    // held is the rule: given back at the first run boundary at which the watch said a lone
    // run came, settled, after the run during which it was accepted.
    assert.ok(yielded.completed >= 2 && yielded.completed <= 6, `given back within a few runs: ${yielded.completed} ran`);
    assert.deepEqual(asked.map((a) => a.yes), [...Array(yielded.completed - 1).fill(false), true], 'given back at the first boundary the watch said so, not before');
    const said = asked.at(-1)!.at;
    assert.ok(said - heardAt >= LONE_RUN_SETTLE_MS - 2, `given back ${said - heardAt} ms after the notice was heard: it had settled`);
    assert.deepEqual(yielded.left, more.slice(yielded.completed), 'the rest given back, in order');
    // Once per lone run: the next batch, begun after it, runs to its end.
    duringRun = undefined;
    const next = await env.run(batches.executeRuns, { runIds: yielded.left, budgetSeconds: 30 }) as BatchResult;
    assert.deepEqual(next.left, []);
    assert.equal(loneRuns.acceptedSince(computeTaskQueue('another-profile'), 0, 0), false, 'a lone run on another queue needs no slot of this one');
  } finally {
    await listener.close();
  }
});

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { closeTestDb, newAccount, newRunRow, testDb } from '../helpers.ts';
import { createBatchActivities, type BatchResult } from '../../activities/execution/batch.ts';
import { insertAcceptedRun } from '../../storage/db/runs.ts';
import type { ExecutedRun } from '../../activities/execution/execute.ts';

// A study's batch writes a run's ending (its results stored, its settlement) while the
// next run's lab executes, when the account has a slot for it. Real Postgres and the
// run's own ending (silico_finish_run); the lab's execution is stubbed: `labMs` of lab,
// then `labDone`, then `storeMs` of storing its results.

after(closeTestDb);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setUp(maxConcurrentRuns: number, n: number, fail?: { runIndex: number }) {
  const db = testDb();
  const owner = await newAccount({ usd: 100 });
  const runIds: string[] = [];
  for (let i = 0; i < n; i++) runIds.push((await insertAcceptedRun(db, newRunRow(owner.account.id, { experiment_id: null }))).id);
  const statusOf = async (id: string) => (await db('runs').where({ id }).first('status')).status as string;
  /** Each run's lab start, with the status its predecessor had then; each run's stub ending. */
  const seen: Array<{ runId: string; previousStatus: string | null }> = [];
  const storedAt = new Map<string, number>();
  const batches = createBatchActivities({
    db, maxConcurrentRuns,
    executeRun: async (runId, labDone): Promise<ExecutedRun> => {
      const i = runIds.indexOf(runId);
      seen.push({ runId, previousStatus: i > 0 ? await statusOf(runIds[i - 1]!) : null });
      await sleep(20);
      labDone();
      await sleep(120);
      if (fail && i === fail.runIndex) throw new Error('the object store refused the results');
      storedAt.set(runId, Date.now());
      return { status: 'completed', computeSeconds: 0.02, outputs: { y: i } };
    },
  });
  return { db, runIds, seen, statusOf, storedAt, batches, env: new MockActivityEnvironment() };
}

test('a run\'s ending is written while the next run\'s lab executes, each run ended once', { timeout: 60_000 }, async () => {
  const { db, runIds, seen, batches, env } = await setUp(2, 5);
  const result = await env.run(batches.executeRuns, { runIds, budgetSeconds: 60 }) as BatchResult;
  assert.deepEqual(result, { left: [], waiting: false, completed: 5, notCompleted: [] });
  assert.deepEqual(seen.map((s) => s.runId), runIds, 'the labs in order');
  assert.deepEqual(seen.slice(1).map((s) => s.previousStatus), ['running', 'running', 'running', 'running'], 'each lab began before the run before it was ended');
  const rows = await db('runs').whereIn('id', runIds).select('id', 'status', 'outputs');
  assert.deepEqual(rows.map((r) => r.status), Array(5).fill('completed'));
  for (const r of rows) assert.deepEqual(r.outputs, { y: runIds.indexOf(r.id) }, 'each run\'s own outputs');
  const endings = await db('run_events').whereIn('run_id', runIds).where({ type: 'state_changed' }).whereRaw(`data->>'status' = 'completed'`).count<{ count: string }[]>('* as count');
  assert.equal(Number(endings[0]!.count), 5, 'one terminal event a run');
});

test('at the account\'s limit no ending is left behind: the next lab waits for it', { timeout: 60_000 }, async () => {
  const { runIds, seen, batches, env } = await setUp(1, 4);
  const result = await env.run(batches.executeRuns, { runIds, budgetSeconds: 60 }) as BatchResult;
  assert.deepEqual(result, { left: [], waiting: false, completed: 4, notCompleted: [] });
  assert.deepEqual(seen.slice(1).map((s) => s.previousStatus), ['completed', 'completed', 'completed'], 'each lab began once the run before it had ended');
});

test('a failed ending fails the batch once every run it began has ended', { timeout: 60_000 }, async () => {
  const { runIds, seen, statusOf, storedAt, batches, env } = await setUp(2, 5, { runIndex: 1 });
  await assert.rejects(env.run(batches.executeRuns, { runIds, budgetSeconds: 60 }), /refused the results/);
  const failedAt = Date.now();
  assert.deepEqual(seen.map((s) => s.runId), runIds.slice(0, 3), 'the lab after the failed ending had begun; none after it');
  assert.equal(await statusOf(runIds[0]!), 'completed');
  assert.equal(await statusOf(runIds[1]!), 'running', 'left to the retry, which runs it again');
  assert.equal(await statusOf(runIds[2]!), 'completed', 'the run begun meanwhile was ended before the batch failed');
  assert.ok(storedAt.get(runIds[2]!)! <= failedAt);
  assert.equal(await statusOf(runIds[3]!), 'queued', 'no slot taken past the failure');
});

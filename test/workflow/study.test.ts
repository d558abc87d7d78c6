import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { studyWorkflow } from '../../workflows/study.ts';
import { CONTROL_TASK_QUEUE, computeTaskQueue } from '../../kernel/workflowNames.ts';
import type { Finish } from '../../storage/runLifecycle.ts';
import { ApplicationFailure } from '@temporalio/common';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { runCancelledSignal } from '../../workflows/studyBatches.ts';
import { BATCH_RUNS } from '../../workflows/studyBatches.ts';
import { WORKER_SHUTDOWN } from '../../kernel/workflowNames.ts';

// studyWorkflow with every activity stubbed (its own and its runs' batches): it asks batch
// after batch until asked for none, runs each batch's runs once, tells each batch once,
// continues as new past its history bound without asking a batch twice, and finishes once;
// its batches give back what they did not reach, wait when the account's slots are taken,
// move across worker shutdowns, fail only the run a broken batch was at, end a run
// cancelled while it executes at once, and end every run when the study is cancelled.
const testEnv = useWorkflowEnvironment({ captureHistories: true });

test('a study asks, runs and tells batch after batch, continues as new past its history bound, and finishes once', async () => {
  const env = testEnv();
  const experimentId = `exp_${crypto.randomUUID()}`;
  const profile = 'p-question';
  const batches = Array.from({ length: 5 }, () => Array.from({ length: 3 }, () => crypto.randomUUID()));
  const asked: number[] = [];
  const told: number[] = [];
  const executed: string[] = [];
  const finished: Finish[] = [];
  const finishedStudies: string[] = [];
  const control = await Worker.create({
    connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath,
    activities: {
      async studySchedule() { return { account: 'acct_test', ref: 'ns/lab@rev-1', window: 2 }; },
      async studyAsk(id: string, batch: number) {
        assert.equal(id, experimentId);
        asked.push(batch);
        return { runIds: batches[batch] ?? [] };
      },
      async studyTell(_id: string, batch: number) { told.push(batch); },
      async finishStudy(id: string) { finishedStudies.push(id); },
      async runSchedule() { return { profile, maxRuntimeSeconds: 60, scheduleToStartSeconds: 30 }; },
      async openRuns(ids: string[]) { return ids.filter((id) => !executed.includes(id)); },
      async endRuns(ids: string[], ending: Finish) {
        for (const runId of ids) finished.push({ ...ending, runId });
        return ids;
      },
    },
  });
  const compute = await Worker.create({
    connection: env.nativeConnection, taskQueue: computeTaskQueue(profile),
    activities: {
      // Two runs a batch, then the rest given back.
      async executeRuns({ runIds }: { runIds: string[] }) {
        for (const runId of runIds.slice(0, 2)) {
          executed.push(runId);
          finished.push({ runId, status: 'completed', computeSeconds: 0.1 });
        }
        return { left: runIds.slice(2), waiting: false, completed: runIds.slice(0, 2).length, notCompleted: [] };
      },
    },
  });
  const workflowId = `experiment-${experimentId}`;
  // A bound a batch of runs passes: every batch after the first starts a new run of the workflow.
  const handle = await env.client.workflow.start(studyWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ experimentId, historyBound: 20 }] });
  const returned = await compute.runUntil(control.runUntil(handle.result()));
  assert.equal(returned, 'completed');
  assert.deepEqual(asked, [0, 1, 2, 3, 4, 5], 'each batch asked once, then one asked for none');
  assert.deepEqual(told, [0, 1, 2, 3, 4]);
  assert.deepEqual([...executed].sort(), batches.flat().sort(), 'each run executed exactly once');
  assert.deepEqual(finished.map((f) => f.runId).sort(), batches.flat().sort());
  assert.deepEqual(finishedStudies, [experimentId]);
  const first = await env.client.workflow.getHandle(workflowId, handle.firstExecutionRunId).describe();
  assert.equal(first.status.name, 'CONTINUED_AS_NEW', 'the first run continued as new past its bound');
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  await Worker.runReplayHistory({ workflowsPath }, history, workflowId);
});

test('a study takes a big batch\'s runs a page at a time, continuing as new between pages past its bound: every run once, each batch told once', async () => {
  const env = testEnv();
  const experimentId = `exp_${crypto.randomUUID()}`;
  const profile = `p-${crypto.randomUUID().slice(0, 8)}`;
  const batches = [Array.from({ length: 25 }, () => crypto.randomUUID()), Array.from({ length: 7 }, () => crypto.randomUUID())];
  const pages: Array<[number, number]> = [];
  const told: number[] = [];
  const executed: string[] = [];
  const control = await Worker.create({
    connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath,
    activities: {
      async studySchedule() { return { account: 'acct_test', ref: 'ns/lab@rev-1', window: 2 }; },
      async studyAsk(_id: string, batch: number, page?: { offset: number; limit: number }) {
        assert.ok(page, 'asked a page at a time');
        pages.push([batch, page.offset]);
        const ids = batches[batch] ?? [];
        return { runIds: ids.slice(page.offset, page.offset + page.limit), runs: ids.length, standing: { runs: 32, completed: executed.length, notCompleted: 0 } };
      },
      async studyTell(_id: string, batch: number) { told.push(batch); },
      async finishStudy() {},
      async runSchedule() { return { profile, maxRuntimeSeconds: 60, scheduleToStartSeconds: 30 }; },
      async openRuns(ids: string[]) { return ids.filter((id) => !executed.includes(id)); },
      async endRuns(ids: string[]) { return ids; },
    },
  });
  const compute = await Worker.create({
    connection: env.nativeConnection, taskQueue: computeTaskQueue(profile),
    activities: {
      async executeRuns({ runIds }: { runIds: string[] }) {
        executed.push(...runIds);
        return { left: [], waiting: false, completed: runIds.length, notCompleted: [] };
      },
    },
  });
  const workflowId = `experiment-${experimentId}`;
  const handle = await env.client.workflow.start(studyWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ experimentId, historyBound: 20, runPage: 10 }] });
  assert.equal(await compute.runUntil(control.runUntil(handle.result())), 'completed');
  assert.deepEqual(pages, [[0, 0], [0, 10], [0, 20], [1, 0], [2, 0]], 'each page of each batch asked once, then a batch asked for none');
  assert.deepEqual(told, [0, 1], 'each batch told once, after its last page');
  assert.deepEqual([...executed].sort(), batches.flat().sort(), 'each run executed exactly once');
  const first = await env.client.workflow.getHandle(workflowId, handle.firstExecutionRunId).describe();
  assert.equal(first.status.name, 'CONTINUED_AS_NEW', 'continued as new between pages');
  await Worker.runReplayHistory({ workflowsPath }, await env.client.workflow.getHandle(workflowId).fetchHistory(), workflowId);
});

/** A study's control and compute workers with its runs' batches stubbed by `executeRuns`; what the control steps were asked is kept. */
async function studyWorkers(env: ReturnType<ReturnType<typeof useWorkflowEnvironment>>, runIds: string[], executeRuns: (input: { runIds: string[] }) => Promise<unknown>) {
  const ended = new Map<string, Finish>();
  const profile = `p-${crypto.randomUUID().slice(0, 8)}`;
  let asked = false;
  const control = await Worker.create({
    connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath,
    activities: {
      async studySchedule() { return { account: 'acct_test', ref: 'ns/lab@rev-1', window: 2 }; },
      async studyAsk() {
        const standing = { runs: runIds.length, completed: 0, notCompleted: 0 };
        if (asked) return { runIds: [], standing };
        asked = true;
        return { runIds, standing };
      },
      async studyTell() {},
      async finishStudy() {},
      async runSchedule() { return { profile, maxRuntimeSeconds: 60, scheduleToStartSeconds: 30 }; },
      async openRuns(ids: string[]) { return ids.filter((id) => !ended.has(id)); },
      async endRuns(ids: string[], ending: Finish) {
        const open = ids.filter((id) => !ended.has(id));
        for (const runId of open) ended.set(runId, { ...ending, runId });
        return open;
      },
    },
  });
  const compute = await Worker.create({ connection: env.nativeConnection, taskQueue: computeTaskQueue(profile), activities: { executeRuns } });
  return { control, compute, ended };
}

test('a batch answered by a worker of an older release, without its counts, counts none and the study goes on to its end', async () => {
  const env = testEnv();
  const runIds = Array.from({ length: 6 }, () => crypto.randomUUID());
  const executed: string[] = [];
  const { control, compute } = await studyWorkers(env, runIds, async ({ runIds: ids }) => {
    executed.push(...ids);
    return { left: [], waiting: false };
  });
  const workflowId = `experiment-exp_${crypto.randomUUID()}`;
  const handle = await env.client.workflow.start(studyWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ experimentId: workflowId.slice('experiment-'.length) }] });
  assert.equal(await compute.runUntil(control.runUntil(handle.result())), 'completed');
  assert.deepEqual([...executed].sort(), [...runIds].sort(), 'every run executed');
  await Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory(), workflowId);
});

test('a study\'s batches: given back runs go first, a full account waits, a worker shutdown moves a batch, a broken batch fails only the run it was at; each run ends once', async () => {
  const env = testEnv();
  const runIds = Array.from({ length: BATCH_RUNS + 30 }, () => crypto.randomUUID());
  const executed: string[] = [];
  const calls: string[][] = [];
  let waited = false;
  let shutdown = false;
  const broken = runIds[BATCH_RUNS + 5]!;
  let brokenTries = 0;
  const { control, compute, ended } = await studyWorkers(env, runIds, async ({ runIds: ids }) => {
    calls.push(ids);
    if (!waited) {
      waited = true;
      return { left: ids, waiting: true, completed: 0, notCompleted: [] };
    }
    if (!shutdown && executed.length > 10) {
      shutdown = true;
      throw ApplicationFailure.create({ type: WORKER_SHUTDOWN, nonRetryable: true, message: 'shut down' });
    }
    let done = 0;
    for (const [i, id] of ids.entries()) {
      if (ended.has(id)) continue;
      if (done === 6) return { left: ids.slice(i), waiting: false, completed: done, notCompleted: [] };
      if (id === broken && brokenTries++ < 10) throw new Error('the object store is down');
      executed.push(id);
      ended.set(id, { runId: id, status: 'completed' });
      done += 1;
    }
    return { left: [], waiting: false, completed: done, notCompleted: [] };
  });
  const workflowId = `experiment-${crypto.randomUUID()}`;
  const handle = await env.client.workflow.start(studyWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ experimentId: 'exp_batches' }] });
  assert.equal(await compute.runUntil(control.runUntil(handle.result())), 'completed');
  assert.ok(calls.every((c) => c.length <= BATCH_RUNS), 'no batch given more than its bound');
  assert.deepEqual(calls.slice(0, 2).map((c) => c.length), [40, 40], 'the runs shared among the places');
  assert.ok(calls.slice(1).some((c) => c.includes(calls[0]![0]!)), 'a batch whose account was full is asked again');
  assert.equal(new Set(executed).size, executed.length, 'no run executed twice');
  assert.deepEqual([...ended.keys()].sort(), [...runIds].sort(), 'every run ended');
  assert.equal(ended.get(broken)!.status, 'failed');
  assert.equal(ended.get(broken)!.error!.code, 'internal_error');
  assert.match(ended.get(broken)!.error!.message, /object store is down/);
  assert.deepEqual([...ended.values()].filter((f) => f.status !== 'completed').map((f) => f.runId), [broken], 'only the run the broken batch was at failed');
  assert.deepEqual([...executed].sort(), runIds.filter((id) => id !== broken).sort(), 'every other run executed');
  assert.ok(brokenTries >= 3, 'the broken batch was retried before its run failed');
  await Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory(), workflowId);
});

test('a study\'s run cancelled while it executes ends at once, cancelled; cancelling the study ends every run not yet ended', async () => {
  const env = testEnv();
  const runIds = Array.from({ length: 6 }, () => crypto.randomUUID());
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => { release = r; });
  const { control, compute, ended } = await studyWorkers(env, runIds, async ({ runIds: ids }) => {
    // The batch executes its first run and hangs there, as a batch on a lost worker would.
    if (!ended.has(ids[0]!)) await held;
    return { left: ids.slice(1), waiting: false, completed: 0, notCompleted: [] };
  });
  const workflowId = `experiment-${crypto.randomUUID()}`;
  const handle = await env.client.workflow.start(studyWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ experimentId: 'exp_cancels' }] });
  await compute.runUntil(control.runUntil(async () => {
    await handle.signal(runCancelledSignal, runIds[0]!);
    for (let i = 0; i < 200 && !ended.has(runIds[0]!); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(ended.get(runIds[0]!)?.status, 'cancelled', 'the run cancelled while it executed ended at once');
    assert.equal(ended.size, 1);
    // What an operator reads of it in the Temporal UI meanwhile.
    const { currentDetails } = await handle.query(workflowMetadataQuery);
    assert.equal(currentDetails, '**Batch 1** (6 runs): running.\n\n1 of 6 runs ended: 0 completed, 1 did not.');
    await handle.cancel();
    await assert.rejects(handle.result());
    release();
  }));
  assert.deepEqual([...ended.keys()].sort(), [...runIds].sort(), 'every run of the cancelled study ended');
  assert.ok([...ended.values()].every((f) => f.status === 'cancelled'));
  await Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory(), workflowId);
});

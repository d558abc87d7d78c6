import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { studyWorkflow } from '../../workflows/study.ts';
import { CONTROL_TASK_QUEUE, computeTaskQueue } from '../../kernel/workflowNames.ts';
import type { Finish } from '../../storage/runLifecycle.ts';

// studyWorkflow with every activity stubbed (its own and its child runs'): it asks batch
// after batch until asked for none, runs each batch's runs once, tells each batch once,
// continues as new past its history bound without asking a batch twice, and finishes once.
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
      async acquireSlot() { return 'running'; },
      async finish(f: Finish) { finished.push(f); return f.status; },
    },
  });
  const compute = await Worker.create({
    connection: env.nativeConnection, taskQueue: computeTaskQueue(profile),
    activities: {
      async executeLab({ runId }: { runId: string }) {
        executed.push(runId);
        return { status: 'completed', computeSeconds: 0.1 };
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

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { experimentWorkflow } from '../../workflows/experiment.ts';
import { CONTROL_TASK_QUEUE, computeTaskQueue } from '../../kernel/workflowNames.ts';
import type { Finish } from '../../storage/runLifecycle.ts';

// experimentWorkflow with every activity stubbed (its own and its child runs'): how many
// runs it keeps in flight, that it starts each exactly once, and that its history replays.
const testEnv = useWorkflowEnvironment();

test('a study starts each run once as a child run workflow, never more in flight than its window, then finishes once; its history replays', async () => {
  const env = testEnv();
  const experimentId = `exp_${crypto.randomUUID()}`;
  const profile = 'p-study';
  const runIds = Array.from({ length: 7 }, () => crypto.randomUUID());
  const executed: string[] = [];
  const finished: Finish[] = [];
  const finishedStudies: string[] = [];
  let inFlight = 0;
  let most = 0;
  const control = await Worker.create({
    connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath,
    activities: {
      async experimentSchedule(id: string) {
        assert.equal(id, experimentId);
        return { account: 'acct_test', runs: runIds.map((runId, i) => ({ runId, ref: `ns/lab@rev-${i % 2}` })), window: 3 };
      },
      async finishExperiment(id: string) { finishedStudies.push(id); },
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
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((r) => setTimeout(r, 100));
        inFlight -= 1;
        return { status: 'completed', computeSeconds: 0.1 };
      },
    },
  });
  const workflowId = `experiment-${experimentId}`;
  const returned = await compute.runUntil(control.runUntil(env.client.workflow.execute(experimentWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ experimentId }] })));
  assert.equal(returned, 'completed');
  assert.deepEqual([...executed].sort(), [...runIds].sort(), 'each run executed exactly once');
  assert.deepEqual(finished.map((f) => f.runId).sort(), [...runIds].sort(), 'each run settled exactly once');
  assert.ok(most <= 3, `at most the window in flight, saw ${most}`);
  assert.ok(most >= 2, 'runs did go side by side');
  assert.deepEqual(finishedStudies, [experimentId]);

  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  await Worker.runReplayHistory({ workflowsPath }, history, workflowId);
});

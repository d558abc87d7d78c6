import { test } from 'node:test';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { stateQuery } from '../../workflows/explain.ts';
import assert from 'node:assert/strict';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { experimentWorkflow } from '../../workflows/experiment.ts';
import { runCancelledSignal } from '../../workflows/studyBatches.ts';
import { CONTROL_TASK_QUEUE, computeTaskQueue } from '../../kernel/workflowNames.ts';
import type { Finish } from '../../storage/runLifecycle.ts';

// experimentWorkflow (a comparison of arms) with every activity stubbed (its own and its
// runs' batches): each batch holds one arm's runs and goes to that arm's compute profile,
// no more batches in flight than its window, each run executed once, a run cancelled while
// it executes ended at once, the comparison stored once; its history replays.
const testEnv = useWorkflowEnvironment();

/** Three arms of four replicates, in the order a comparison starts them (replicate 0 of every arm, then 1...); arm 1 on another profile. */
function comparison() {
  const profiles = [`p-a-${crypto.randomUUID().slice(0, 8)}`, `p-b-${crypto.randomUUID().slice(0, 8)}`];
  const runs = Array.from({ length: 4 }, () => [0, 1, 2].map((arm) => ({ runId: crypto.randomUUID(), ref: `ns/lab@rev-${arm}`, arm }))).flat();
  const armOf = new Map<string, number>(runs.map((r) => [r.runId, r.arm]));
  const profileOf = (runId: string) => profiles[armOf.get(runId) === 1 ? 1 : 0]!;
  return { profiles, runs, armOf, profileOf };
}

async function comparisonWorkers(
  env: ReturnType<ReturnType<typeof useWorkflowEnvironment>>, experimentId: string, c: ReturnType<typeof comparison>,
  executeRuns: (profile: string, input: { runIds: string[] }) => Promise<unknown>,
) {
  const ended = new Map<string, Finish>();
  const finishedStudies: string[] = [];
  const control = await Worker.create({
    connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath,
    activities: {
      async experimentSchedule(id: string) {
        assert.equal(id, experimentId);
        return { account: 'acct_test', runs: c.runs, window: 2 };
      },
      async finishExperiment(id: string) { finishedStudies.push(id); },
      async runSchedule(runId: string) { return { profile: c.profileOf(runId), maxRuntimeSeconds: 60, scheduleToStartSeconds: 30 }; },
      async openRuns(ids: string[]) { return ids.filter((id) => !ended.has(id)); },
      async endRuns(ids: string[], ending: Finish) {
        const open = ids.filter((id) => !ended.has(id));
        for (const runId of open) ended.set(runId, { ...ending, runId });
        return open;
      },
    },
  });
  const computes = await Promise.all(c.profiles.map((profile) => Worker.create({
    connection: env.nativeConnection, taskQueue: computeTaskQueue(profile), activities: { executeRuns: (input: { runIds: string[] }) => executeRuns(profile, input) },
  })));
  const running = <T>(p: Promise<T>) => computes.reduce((inner, w) => w.runUntil(inner), control.runUntil(p));
  return { ended, finishedStudies, running };
}

test('a comparison executes its runs in batches of one arm on that arm\'s profile, never more in flight than its window, each once; then stores the comparison once; its history replays', async () => {
  const env = testEnv();
  const experimentId = `exp_${crypto.randomUUID()}`;
  const c = comparison();
  const batches: Array<{ profile: string; runIds: string[] }> = [];
  const executed: string[] = [];
  let inFlight = 0;
  let most = 0;
  const { ended, finishedStudies, running } = await comparisonWorkers(env, experimentId, c, async (profile, { runIds }) => {
    batches.push({ profile, runIds });
    inFlight += 1;
    most = Math.max(most, inFlight);
    await new Promise((r) => setTimeout(r, 100));
    // Two runs a batch, then the rest given back.
    for (const runId of runIds.slice(0, 2)) {
      executed.push(runId);
      ended.set(runId, { runId, status: 'completed', computeSeconds: 0.1 });
    }
    inFlight -= 1;
    return { left: runIds.slice(2), waiting: false, completed: Math.min(2, runIds.length), notCompleted: [] };
  });
  const workflowId = `experiment-${experimentId}`;
  const handle = await env.client.workflow.start(experimentWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ experimentId }] });
  // With its ending, what an operator reads of it in the Temporal UI: its `state` query and current details.
  const { result, stateOf, detailsOf } = await running(handle.result().then(async (r) => ({
    result: r, stateOf: await handle.query(stateQuery), detailsOf: (await handle.query(workflowMetadataQuery)).currentDetails,
  })));
  assert.equal(result, 'completed');
  const all = c.runs.map((r) => r.runId).sort();
  assert.deepEqual([...executed].sort(), all, 'each run executed exactly once');
  assert.deepEqual([...ended.keys()].sort(), all);
  for (const b of batches) {
    assert.equal(new Set(b.runIds.map((id) => c.armOf.get(id))).size, 1, 'a batch holds one arm\'s runs');
    assert.equal(b.profile, c.profileOf(b.runIds[0]!), 'on its arm\'s profile');
  }
  assert.ok(batches.some((b) => b.profile === c.profiles[1]) && batches.some((b) => b.profile === c.profiles[0]));
  assert.ok(most <= 2, `at most the window in flight, saw ${most}`);
  assert.equal(most, 2, 'batches did go side by side');
  assert.deepEqual(finishedStudies, [experimentId]);
  assert.deepEqual(stateOf, { object: 'experiment', experiment_id: experimentId, status: 'completed', runs: all.length, completed: all.length, not_completed: 0 });
  assert.equal(detailsOf, `**Completed**: ${all.length} of ${all.length} runs completed.`);
  // Each batch says on the UI's timeline which runs it executes (its activity's summary).
  const scheduled = (await handle.fetchHistory()).events!.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeRuns');
  assert.deepEqual(scheduled.map((e) => defaultPayloadConverter.fromPayload<string>(e.userMetadata!.summary as Payload)).sort(),
    batches.map((b) => `${b.runIds.length} ${b.runIds.length === 1 ? 'run' : 'runs'}, from run ${b.runIds[0]}, for up to 1 s`).sort());
  await Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory(), workflowId);
});

test('a comparison\'s run cancelled while it executes ends at once, cancelled, and the comparison goes on', async () => {
  const env = testEnv();
  const experimentId = `exp_${crypto.randomUUID()}`;
  const c = comparison();
  const stuck = c.runs[0]!.runId;
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => { release = r; });
  const { ended, finishedStudies, running } = await comparisonWorkers(env, experimentId, c, async (_profile, { runIds }) => {
    for (const runId of runIds) {
      // The first run hangs, as a lab on a lost worker would, until it was ended elsewhere.
      if (runId === stuck) await held;
      if (!ended.has(runId)) ended.set(runId, { runId, status: 'completed', computeSeconds: 0.1 });
    }
    return { left: [], waiting: false, completed: runIds.length, notCompleted: [] };
  });
  const workflowId = `experiment-${experimentId}`;
  const handle = await env.client.workflow.start(experimentWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ experimentId }] });
  const returned = await running((async () => {
    await handle.signal(runCancelledSignal, stuck);
    for (let i = 0; i < 200 && !ended.has(stuck); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(ended.get(stuck)?.status, 'cancelled', 'the run cancelled while it executed ended at once');
    release();
    return handle.result();
  })());
  assert.equal(returned, 'completed');
  assert.deepEqual([...ended.keys()].sort(), c.runs.map((r) => r.runId).sort(), 'every run ended');
  assert.deepEqual([...ended.values()].filter((f) => f.status === 'cancelled').map((f) => f.runId), [stuck]);
  assert.deepEqual(finishedStudies, [experimentId]);
  await Worker.runReplayHistory({ workflowsPath }, await handle.fetchHistory(), workflowId);
});

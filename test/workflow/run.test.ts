import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { runWorkflow } from '../../workflows/run.ts';
import { computeTaskQueue } from '../../kernel/workflowNames.ts';
import type { Finish } from '../../storage/runLifecycle.ts';
import type { ExecutionResult } from '../../activities/execution/execute.ts';

// runWorkflow with every activity stubbed: what it does with each execution result.
const testEnv = useWorkflowEnvironment();

/** The control queue's worker of one test's run, its steps stubbed; the endings it recorded go to `finished`. */
function controlWorker(id: string, profile: string, finished: Finish[]) {
  return Worker.create({
    connection: testEnv().nativeConnection, taskQueue: `test-${id}`, workflowsPath,
    activities: {
      async runSchedule() { return { profile, maxRuntimeSeconds: 60, scheduleToStartSeconds: 30 }; },
      async acquireSlot() { return 'running'; },
      async finish(f: Finish) { finished.push(f); return f.status; },
    },
  });
}

async function runWith(result: ExecutionResult | Error): Promise<{ returned: string; finished: Finish[] }> {
  const id = crypto.randomUUID();
  const profile = `p-${id.slice(0, 8)}`;
  const finished: Finish[] = [];
  const env = testEnv();
  const control = await controlWorker(id, profile, finished);
  const compute = await Worker.create({ connection: env.nativeConnection, taskQueue: computeTaskQueue(profile), activities: { async executeLab() { if (result instanceof Error) throw result; return result; } } });
  const returned = await compute.runUntil(control.runUntil(env.client.workflow.execute(runWorkflow, { taskQueue: `test-${id}`, workflowId: `run-${id}`, args: [{ runId: id }] })));
  return { returned, finished };
}

test('a completed execution is settled with its measured compute; its outputs never pass through the workflow', async () => {
  const { returned, finished } = await runWith({ status: 'completed', computeSeconds: 1.5 });
  assert.equal(returned, 'completed');
  assert.equal(finished.length, 1);
  assert.deepEqual({ ...finished[0], runId: undefined }, { runId: undefined, status: 'completed', error: null, computeSeconds: 1.5 });
});

test('an execution that fails on the platform\'s side ends as internal_error with nothing charged', async () => {
  const { returned, finished } = await runWith(ApplicationFailure.nonRetryable('object store unreachable'));
  assert.equal(returned, 'failed');
  assert.equal(finished.length, 1);
  assert.equal(finished[0]!.error?.code, 'internal_error');
  assert.match(finished[0]!.error!.message, /object store unreachable/);
  assert.equal(finished[0]!.computeSeconds, 0, 'the lab may have finished, but the failure is not its own');
});

test('an execution that found its run cancelled before it began ends the run as cancelled', async () => {
  const { returned, finished } = await runWith({ status: 'cancelled', error: null });
  assert.equal(returned, 'cancelled');
  assert.equal(finished.length, 1);
  assert.equal(finished[0]!.status, 'cancelled');
  assert.equal(finished[0]!.computeSeconds, undefined, 'no measure: only time since execution began is charged, none here');
});

test('an execution skipped because the run had already ended settles nothing', async () => {
  const { returned, finished } = await runWith({ status: 'skipped' });
  assert.equal(returned, 'skipped');
  assert.deepEqual(finished, []);
});

test('a cancelled run ends at once even when its execution never answers the cancellation (a worker gone)', async () => {
  const id = crypto.randomUUID();
  const profile = `p-${id.slice(0, 8)}`;
  const finished: Finish[] = [];
  const env = testEnv();
  let began!: () => void;
  const executing = new Promise<void>((r) => { began = r; });
  const control = await controlWorker(id, profile, finished);
  // Never heartbeats and ignores cancellation, as an execution on a worker that is gone.
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  const compute = await Worker.create({
    connection: env.nativeConnection, taskQueue: computeTaskQueue(profile),
    activities: { async executeLab() { began(); await held; return { status: 'completed', computeSeconds: 1 }; } },
  });
  const returned = await compute.runUntil(control.runUntil(async () => {
    const handle = await env.client.workflow.start(runWorkflow, { taskQueue: `test-${id}`, workflowId: `run-${id}`, args: [{ runId: id }] });
    await executing;
    const t0 = Date.now();
    await handle.cancel();
    const r = await handle.result();
    assert.ok(Date.now() - t0 < 5000, `ended ${Date.now() - t0} ms after the cancel`);
    release();
    return r;
  }));
  assert.equal(returned, 'cancelled');
  assert.deepEqual(finished.map((f) => f.status), ['cancelled']);
});

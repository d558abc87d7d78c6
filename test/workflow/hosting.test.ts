import { test } from 'node:test';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { stateQuery } from '../../workflows/explain.ts';
import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, defaultPayloadConverter, type Payload } from '@temporalio/common';
import { WorkflowFailedError, WorkflowUpdateFailedError, type WorkflowHandle, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { bundledWorkflows, useWorkflowEnvironment } from './env.ts';
import {
  hostingActionUpdate, hostingLifecycleWorkflow, hostingStateQuery, REVISION_CONFLICT, type HostingState, type Recorded,
} from '../../workflows/hosting.ts';
import { computeTaskQueue, hostingWorkflowId, servingTaskQueue } from '../../kernel/workflowNames.ts';
import type { HostingAction, HostingStatus } from '../../activities/hosting.ts';

// hostingLifecycleWorkflow with its activities stubbed, driven to the endings the service
// seldom reaches: continued as new (Temporal suggests it here after a few dozen events, not
// thousands), cancelled, and failed. With SILICO_CAPTURE_HISTORIES set, their histories are
// kept for the replay test (test/replay).
const SUGGEST_CONTINUE_AS_NEW_AT = 40;
const testEnv = useWorkflowEnvironment({ dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW_AT }, captureHistories: true });

/** One change the lifecycle recorded, and the run that recorded it. */
interface Recording { change: Record<string, unknown>; event: { kind: string; actor?: string | null; message: string }; runId: string }
const runOf = (ctx: Context) => ctx.info.workflowExecution?.runId ?? '';

/** What one serving activity did: the run that scheduled it, and whether it was stopped. */
interface Serving { runId: string; stopped: boolean }

/**
 * One lab's lifecycle with its workers: the lifecycle's own queue (its local activities
 * record into `recorded`; the balance always covers the standing cost), the profile's
 * compute queue (the checks) and serving queue (a serving holds until it is cancelled,
 * as a warm pool does).
 */
async function lifecycle(opts: { checksOk?: boolean; recordFails?: string } = {}) {
  const env = testEnv();
  const labId = `lab_${crypto.randomUUID()}`;
  const profile = `p-${labId.slice(4, 12)}`;
  const taskQueue = `test-${labId}`;
  const recorded: Recording[] = [];
  const servings: Serving[] = [];
  const control = await Worker.create({
    connection: env.nativeConnection, taskQueue, workflowBundle: await bundledWorkflows(),
    activities: {
      async recordHosting(lab: string, generation: number, change: Record<string, unknown>, event: Recording['event']) {
        assert.deepEqual([lab, generation], [labId, 1]);
        if (event.kind === opts.recordFails) throw ApplicationFailure.nonRetryable(`the record of ${event.kind} was refused`);
        recorded.push({ change, event, runId: runOf(Context.current()) });
      },
      async accrueStandingCost() {
        return { charged_micros: 0, short: false };
      },
    },
  });
  const compute = await Worker.create({
    connection: env.nativeConnection, taskQueue: computeTaskQueue(profile),
    activities: {
      async hostingChecks() {
        const checked_at = new Date().toISOString();
        return { ok: opts.checksOk ?? true, checks: [{ check: 'environment', status: opts.checksOk === false ? 'failed' : 'passed', detail: null, checked_at }] };
      },
    },
  });
  const serve = await Worker.create({
    connection: env.nativeConnection, taskQueue: servingTaskQueue(profile),
    // A cancellation reaches the serving on its next heartbeat: at once, not 8 s later.
    maxHeartbeatThrottleInterval: '100 milliseconds',
    activities: {
      async serveDeployment(lab: string) {
        assert.equal(lab, labId);
        const ctx = Context.current();
        const serving: Serving = { runId: runOf(ctx), stopped: false };
        servings.push(serving);
        try {
          for (;;) {
            ctx.heartbeat();
            await ctx.sleep(100);
          }
        } catch (err) {
          serving.stopped = err instanceof CancelledFailure;
          throw err;
        }
      },
    },
  });
  const workflowId = hostingWorkflowId(labId);
  const initial: HostingState = { labId, generation: 1, profile, status: 'requested', revision: 1, approvalRequired: false, review: null };
  return {
    labId, workflowId, initial, recorded, servings,
    /** Runs `body` with the lifecycle started and its workers polling. */
    run: <T>(body: (handle: WorkflowHandleWithFirstExecutionRunId<typeof hostingLifecycleWorkflow>) => Promise<T>): Promise<T> =>
      serve.runUntil(compute.runUntil(control.runUntil(async () => body(await env.client.workflow.start(hostingLifecycleWorkflow, { taskQueue, workflowId, args: [initial] }))))),
  };
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  for (const started = Date.now(); ;) {
    const got = await probe();
    if (got) return got;
    if (Date.now() - started > ms) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The lifecycle's current run once it waits for the next change (its last event is the
 * timer of its hourly accrual), or once it ended: nothing it does is still in flight.
 */
async function settled(handle: WorkflowHandle<typeof hostingLifecycleWorkflow>): Promise<{ runId: string; state: Recorded | null }> {
  return until('the lifecycle waits for the next change', async () => {
    const d = await handle.describe();
    if (d.status.name !== 'RUNNING') return { runId: d.runId, state: null };
    const events = (await testEnv().client.workflow.getHandle(handle.workflowId, d.runId).fetchHistory()).events ?? [];
    if (!events.at(-1)?.timerStartedEventAttributes) return undefined;
    return { runId: d.runId, state: await handle.query(hostingStateQuery) };
  });
}

const act = (handle: WorkflowHandle<typeof hostingLifecycleWorkflow>, action: HostingAction, revision: number) =>
  handle.executeUpdate(hostingActionUpdate, { args: [{ revision, action, actor: 'acct_owner' }] });

test('past the history Temporal suggests, a lifecycle continues as a new run carrying its state; the new run serves when ready and keeps taking changes', async () => {
  const env = testEnv();
  const lab = await lifecycle();
  await lab.run(async (handle) => {
    const firstRunId = handle.firstExecutionRunId;
    const first = env.client.workflow.getHandle(lab.workflowId, firstRunId);
    let now = await settled(handle);
    assert.deepEqual(now.state, { status: 'ready', revision: 1, pending_actions: [] }, 'checked and ready (no review asked)');
    // What an operator reads in the Temporal UI: where it stands (details) and the `state` query.
    assert.deepEqual(await handle.query(stateQuery), {
      object: 'hosting', lab_id: lab.initial.labId, generation: lab.initial.generation, compute_profile: lab.initial.profile, status: 'ready', revision: 1, pending_actions: [], approval: 'not_required',
    });
    assert.equal((await handle.query(workflowMetadataQuery)).currentDetails,
      `**ready** (revision 1, generation ${lab.initial.generation}): ready: a worker of the profile holds its warm instances; the standing cost is charged hourly.`);
    assert.equal(lab.servings.filter((s) => !s.stopped).length, 1, 'a ready deployment is served');

    // Pause and resume, one change at a time, until the run has continued as new.
    let sent = 0;
    while (now.runId === firstRunId) {
      assert.ok(sent < 30, `continued as new within 30 changes (history ${(await first.describe()).historyLength} events)`);
      const { status, revision }: Recorded = now.state!;
      const answer: Recorded = await act(handle, status === 'ready' ? 'pause' : 'resume', revision);
      sent += 1;
      assert.equal(answer.revision, revision + 1);
      now = await settled(handle);
    }
    assert.equal((await first.describe()).status.name, 'CONTINUED_AS_NEW');

    // The new run starts from the state the first held when it continued: nothing lost, nothing pending.
    const firstEvents = (await first.fetchHistory()).events!;
    const continued = firstEvents.at(-1)!.workflowExecutionContinuedAsNewEventAttributes!;
    assert.equal(continued.newExecutionRunId, now.runId);
    const carried = defaultPayloadConverter.fromPayload<HostingState>(continued.input!.payloads![0] as Payload);
    const status: HostingStatus = sent % 2 === 1 ? 'paused' : 'ready';
    assert.deepEqual(carried, { ...lab.initial, status, revision: 1 + sent }, 'the carried state: status and revision after every change, the lab and its profile');
    assert.deepEqual(now.state, { status, revision: 1 + sent, pending_actions: [] }, 'the new run answers with the carried state');
    assert.ok(firstEvents.some((e) => e.workflowTaskStartedEventAttributes?.suggestContinueAsNew), 'Temporal suggested it');
    assert.equal(lab.recorded.filter((r) => r.runId === firstRunId).length, lab.recorded.length, 'continuing records nothing: the read model is unchanged');

    // An activity belongs to the run that scheduled it: the first run's serving was stopped
    // before it continued; the new run serves if it is ready.
    assert.ok(lab.servings.filter((s) => s.runId === firstRunId).every((s) => s.stopped), 'the first run left no serving behind');
    assert.deepEqual(lab.servings.filter((s) => s.runId === now.runId), status === 'ready' ? [{ runId: now.runId, stopped: false }] : [], 'the new run serves if, and only if, it is ready');

    // The continued run takes changes as the first did: a stale revision is refused...
    await assert.rejects(act(handle, status === 'ready' ? 'pause' : 'resume', 1), (err: unknown) => {
      assert.ok(err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === REVISION_CONFLICT, String(err));
      return true;
    });
    // ...a current one applied, recorded by the new run, and serving follows it.
    if (status === 'paused') {
      await act(handle, 'resume', now.state!.revision);
      now = await settled(handle);
    }
    assert.deepEqual(now.state, { status: 'ready', revision: carried.revision + (status === 'paused' ? 1 : 0), pending_actions: [] });
    assert.ok(lab.servings.some((s) => s.runId === now.runId && !s.stopped), 'served by the new run');
    await act(handle, 'pause', now.state!.revision);
    now = await settled(handle);
    assert.notEqual(now.runId, firstRunId);
    assert.deepEqual(now.state?.status, 'paused');
    assert.ok(lab.servings.every((s) => s.stopped), 'pausing stops the new run\'s serving');
    assert.ok(lab.recorded.some((r) => r.runId !== firstRunId && r.event.kind === 'paused'), 'the pause recorded by a continued run');

    await act(handle, 'retire', now.state!.revision);
    assert.equal(await handle.result(), 'retired', 'the chain ends as any lifecycle does');
    assert.deepEqual(lab.recorded.slice(-2).map((r) => r.change.status), ['retiring', 'retired']);
  });
});

test('a cancelled lifecycle ends cancelled and stops serving; it records nothing (the hourly reconciliation fails its record)', async () => {
  const lab = await lifecycle();
  await lab.run(async (handle) => {
    const { state } = await settled(handle);
    assert.equal(state?.status, 'ready');
    assert.equal(lab.servings.length, 1);
    const before = lab.recorded.length;
    await handle.cancel();
    await assert.rejects(handle.result(), (err: unknown) => err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure);
    assert.equal((await handle.describe()).status.name, 'CANCELLED');
    await until('the serving stopped', async () => lab.servings[0]!.stopped);
    assert.equal(lab.recorded.length, before, 'nothing recorded on the way out');
  });
});

test('a lifecycle whose change cannot be recorded fails, at the step it could not record, and stops serving', async () => {
  const lab = await lifecycle({ recordFails: 'paused' });
  await lab.run(async (handle) => {
    const { state } = await settled(handle);
    assert.equal(state?.status, 'ready');
    // The request is recorded; the status change it asks for is refused by the record.
    await act(handle, 'pause', state!.revision);
    await assert.rejects(handle.result(), (err: unknown) => {
      assert.ok(err instanceof WorkflowFailedError, String(err));
      // A local activity's failure is the workflow's cause as the activity threw it.
      assert.match(String(err.cause?.message), /the record of paused was refused/);
      return true;
    });
    assert.equal((await handle.describe()).status.name, 'FAILED');
    assert.deepEqual(lab.recorded.map((r) => r.event.kind), ['checking', 'checks_finished', 'ready', 'action_requested']);
    await until('the serving stopped', async () => lab.servings[0]!.stopped);
  });
});

test('failed deployment checks end the lifecycle as failed (a completed run), never served', async () => {
  const lab = await lifecycle({ checksOk: false });
  await lab.run(async (handle) => {
    assert.equal(await handle.result(), 'failed');
    assert.deepEqual(lab.servings, []);
    assert.equal(lab.recorded.at(-1)?.change.status, 'failed');
  });
});

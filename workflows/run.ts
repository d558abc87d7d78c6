import {
  proxyActivities, proxyLocalActivities, sleep, CancellationScope, isCancellation, ActivityFailure, ApplicationFailure, TimeoutFailure, ActivityCancellationType, patched,
} from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs.ts';
import type { ExecutionActivities, ExecutionResult } from '../activities/execution/execute.ts';
import { computeTaskQueue, WORKER_SHUTDOWN } from '../kernel/workflowNames.ts';
import type { RunWorkflowInput } from '../kernel/runSchedule.ts';

/** Runs started from this version on do not wait for their execution to confirm a cancel. */
const CANCEL_WITHOUT_WAITING = 'run-cancel-without-waiting';

/**
 * Runs started from this version on take their schedule from their input, and begin
 * with their execution when the acceptance took their slot: no control step before it.
 */
const ACCEPTED_WITH_SCHEDULE = 'run-accepted-with-schedule';

/** How many worker shutdowns a run may be moved across before it fails. */
const MAX_SHUTDOWN_RESTARTS = 20;

// The control steps are short Postgres transactions: local activities run them in the
// worker that holds the workflow, without a round trip through the server per step.
const control = proxyLocalActivities<RunActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });

/**
 * One run, workflow id `run-<run_id>`: wait for an account concurrency slot (unless its
 * acceptance took one), execute on the profile's compute queue (heartbeats, cancellation
 * without waiting, wall-clock bound), then settle and record the ending. Compute was reserved when the run was accepted; settlement
 * runs whatever happened, in a scope cancellation cannot interrupt, exactly once.
 */
export async function runWorkflow(args: RunWorkflowInput): Promise<string> {
  const { runId } = args;
  let ending: Parameters<RunActivities['finish']>[0] | null = { runId, status: 'failed', error: { code: 'internal_error', message: 'The run ended unexpectedly.' } };
  try {
    const given = args.schedule && patched(ACCEPTED_WITH_SCHEDULE) ? args.schedule : undefined;
    const schedule = given ?? await control.runSchedule(runId);
    let slot = given && args.running ? 'running' : await control.acquireSlot(runId);
    for (let wait = 1; slot === 'wait'; wait = Math.min(wait * 2, 10)) {
      await sleep(`${wait} seconds`);
      slot = await control.acquireSlot(runId);
    }
    if (slot !== 'running') {
      ending = null; // already ended (or being ended) elsewhere
      return slot;
    }
    const compute = proxyActivities<ExecutionActivities>({
      taskQueue: computeTaskQueue(schedule.profile),
      scheduleToStartTimeout: `${schedule.scheduleToStartSeconds} seconds`,
      startToCloseTimeout: `${schedule.maxRuntimeSeconds + 120} seconds`,
      heartbeatTimeout: '20 seconds',
      // A worker that dies mid-run is replaced by a retry on another one; the lab's own
      // failures come back as results, not errors, and are never retried.
      retry: { maximumAttempts: 3 },
      // A cancelled run ends at once, whatever state its execution is in (a worker gone,
      // an activity not heartbeating): the worker stops the lab on the run's own cancel
      // notice, and on Temporal's request when that reaches it.
      cancellationType: patched(CANCEL_WITHOUT_WAITING) ? ActivityCancellationType.TRY_CANCEL : ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
    let result: ExecutionResult | undefined;
    // A lab stopped because its worker shut down is scheduled again: a fresh activity, so a
    // deployment does not use up the attempts that are there for workers that die.
    for (let restarts = 0; !result; restarts++) {
      try {
        result = await compute.executeLab({ runId });
      } catch (err) {
        const shutdown = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === WORKER_SHUTDOWN;
        if (!shutdown || restarts >= MAX_SHUTDOWN_RESTARTS) throw err;
      }
    }
    if (result.status === 'skipped') {
      ending = null;
      return 'skipped';
    }
    // Outputs were recorded by the activity itself (claim check): only the ending travels here.
    ending = { runId, status: result.status, error: result.error ?? null, computeSeconds: result.computeSeconds };
  } catch (err) {
    if (isCancellation(err)) {
      ending = { runId, status: 'cancelled', error: null };
    } else if (err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'SCHEDULE_TO_START') {
      ending = { runId, status: 'failed', error: { code: 'capacity_unavailable', message: 'No worker for this compute profile picked the run up in time; nothing was charged.' }, computeSeconds: 0 };
    } else {
      // The platform failed, not the lab: nothing is charged, even if the lab had finished.
      ending = { runId, status: 'failed', error: { code: 'internal_error', message: err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : 'The run failed.' }, computeSeconds: 0 };
    }
  } finally {
    const final = ending;
    if (final) await CancellationScope.nonCancellable(() => control.finish(final));
  }
  return ending?.status ?? 'ended';
}

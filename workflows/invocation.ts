import {
  proxyActivities, proxyLocalActivities, sleep, CancellationScope, isCancellation, ActivityFailure, ApplicationFailure, TimeoutFailure, ActivityCancellationType,
} from '@temporalio/workflow';
import type { InvocationActivities, InvocationEnding } from '../activities/invocations.ts';

const control = proxyLocalActivities<InvocationActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });

/** Executions tried before an invocation whose workers keep going away ends `expired`. */
const MAX_ATTEMPTS = 3;
/** How long an invocation waits for its deployment to be served somewhere, at most. */
const SERVED_WAIT_SECONDS = 60;
/** The failure type of an invocation sent where its deployment is not served (activities/invocations.ts). */
const NOT_SERVED_HERE = 'NotServedHere';

/** What the api starts an invocation with: its id, its schedule and where its deployment was served when it was accepted. */
export interface InvocationArgs {
  invocationId: string;
  schedule?: { labId: string; generation: number; maxSeconds: number };
  servedBy?: string | null;
}

/** Whether a failed execution means its worker (and lease) was lost, not that the lab failed. */
function lostWorker(err: unknown): boolean {
  if (!(err instanceof ActivityFailure)) return false;
  if (err.cause instanceof TimeoutFailure) return true;
  return err.cause instanceof ApplicationFailure && err.cause.type === NOT_SERVED_HERE;
}

/**
 * One hosted invocation, workflow id `invocation-<id>`: run once on a warm instance of
 * its deployment, on the task queue of the worker serving it, under a lease the
 * execution's heartbeats renew. A lost worker (lease expired: heartbeat or start
 * timeout) is retried on wherever the deployment is served next, within bounds, then
 * the invocation ends `expired`; cancellation stops the work. The ending is settled
 * exactly once (charged for measured compute of the attempt that ran it).
 */
export async function invocationWorkflow(args: InvocationArgs): Promise<string> {
  const { invocationId } = args;
  let ending: InvocationEnding = { id: invocationId, status: 'failed', error: { code: 'internal_error', message: 'The invocation ended unexpectedly.' }, computeSeconds: 0 };
  try {
    // Started without its schedule (before the api sent it), it is read here.
    const schedule = args.schedule ?? await control.invocationSchedule(invocationId);
    let servedBy = args.servedBy ?? null;
    let attempts = 0;
    let waited = 0;
    for (;;) {
      // Where the deployment was served at acceptance, for the first attempt; read afresh after.
      const where = servedBy ? { queue: servedBy, status: 'ready' } : await control.servingQueueOf(schedule.labId, schedule.generation);
      servedBy = null;
      if (where.status !== 'ready') {
        ending = { id: invocationId, status: 'failed', error: { code: where.status === 'paused' ? 'deployment_paused' : 'deployment_unavailable', message: `The deployment is ${where.status ?? 'gone'}.` }, computeSeconds: 0 };
        break;
      }
      if (!where.queue) {
        if (waited >= SERVED_WAIT_SECONDS) {
          ending = { id: invocationId, status: 'expired', error: { code: 'deployment_not_served', message: 'No worker served the deployment in time.' }, computeSeconds: 0 };
          break;
        }
        await sleep('1 second');
        waited += 1;
        continue;
      }
      const host = proxyActivities<InvocationActivities>({
        taskQueue: where.queue, scheduleToStartTimeout: '10 seconds', startToCloseTimeout: `${schedule.maxSeconds + 60} seconds`,
        heartbeatTimeout: '5 seconds', retry: { maximumAttempts: 1 }, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      });
      attempts += 1;
      try {
        const r = await host.invokeHosted(invocationId);
        if (r.status === 'skipped') return 'skipped';
        ending = { id: invocationId, status: r.status, error: r.error ?? null, computeSeconds: r.computeSeconds };
        break;
      } catch (err) {
        if (isCancellation(err) || !lostWorker(err)) throw err;
        if (attempts >= MAX_ATTEMPTS) {
          ending = { id: invocationId, status: 'expired', error: { code: 'lease_expired', message: `The invocation's worker was lost ${attempts} times; it was not completed.` }, computeSeconds: 0 };
          break;
        }
      }
    }
  } catch (err) {
    ending = isCancellation(err)
      ? { id: invocationId, status: 'cancelled', error: null, computeSeconds: null }
      : { id: invocationId, status: 'failed', error: { code: 'internal_error', message: err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : 'The invocation failed.' }, computeSeconds: 0 };
  } finally {
    const final = ending;
    await CancellationScope.nonCancellable(() => control.finishInvocation(final));
  }
  return ending.status;
}

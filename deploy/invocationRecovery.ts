import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Db } from '../storage/db/knex.ts';
import { finishInvocation, invocationsToRecover, markWorkflowStarted } from '../storage/db/hostedInvocations.ts';
import { CONTROL_TASK_QUEUE, invocationWorkflowId } from '../kernel/workflowNames.ts';
import { invocationWorkflow, type InvocationArgs } from '../workflows/invocation.ts';
import { invocationMetadata } from '../api/invocations/metadata.ts';

const BATCH = 100;
/** How long one start may take before the pass moves on (Temporal unreachable, not refusing). */
const START_DEADLINE_MS = 5000;
/** How often it looks: an invocation its worker does not carry waits at most about this long past its grace. */
const EVERY_MS = 1000;
/**
 * How long a queued invocation may wait for its serving worker to lease it, and an expired
 * lease for its worker to record the ending it came to, before its workflow takes it on.
 */
export const RECOVER_AFTER_SECONDS = 2;

/**
 * Starts `invocation-<id>` for each invocation its serving worker is not carrying
 * (api/invocations/accept.ts accepts one for a served deployment with no workflow): its
 * announcement was missed, or its worker was lost. One whose cancellation was asked for
 * is ended cancelled instead. The workflow then does what it does
 * for any invocation: sends it to wherever the deployment is served, retries a lost
 * worker's, and records the ending. Every worker runs one; the workflow id, never reused
 * once its workflow completed, makes a second start of the same invocation a no-op.
 */
export function startInvocationRecovery(deps: { db: Db; client: Client; baseUrl: string; log: Logger }): { stop: () => Promise<void> } {
  const { db, client, log } = deps;
  let running: Promise<void> | undefined;
  const recover = async (row: Awaited<ReturnType<typeof invocationsToRecover>>[number]): Promise<void> => {
    // Its cancellation asked for and its worker gone: nothing is left to stop or to run.
    // Ended here as its workflow would end it (cancelled, charged the time since it began).
    if (row.cancel_requested_at) {
      await finishInvocation(db, { id: row.id, status: 'cancelled', error: null, computeSeconds: null });
      log.info({ invocation: row.id }, 'a cancelled invocation whose worker was gone was ended');
      return;
    }
    try {
      await client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () => client.workflow.start(invocationWorkflow, {
        taskQueue: CONTROL_TASK_QUEUE,
        workflowId: invocationWorkflowId(row.id),
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
        args: [{ invocationId: row.id } satisfies InvocationArgs],
        ...invocationMetadata(deps.baseUrl, row),
      }));
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    await markWorkflowStarted(db, row.id);
    log.info({ invocation: row.id }, 'an invocation its worker did not carry was handed to its workflow');
  };
  const pass = async (): Promise<void> => {
    let rows: Awaited<ReturnType<typeof invocationsToRecover>>;
    try {
      rows = await invocationsToRecover(db, RECOVER_AFTER_SECONDS, BATCH);
    } catch (err) {
      log.warn({ err }, 'invocation recovery could not read; the next pass retries');
      return;
    }
    // One that cannot be handed over now does not hold up the others.
    for (const row of rows) await recover(row).catch((err: unknown) => log.warn({ err, invocation: row.id }, 'an invocation could not be handed to its workflow; the next pass retries'));
  };
  const timer = setInterval(() => {
    running ??= pass().finally(() => (running = undefined));
  }, EVERY_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

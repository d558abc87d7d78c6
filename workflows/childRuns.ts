import { executeChild, log, ParentClosePolicy, ChildWorkflowCancellationType, WorkflowIdReusePolicy } from '@temporalio/workflow';
import { workflowSearchAttributes } from '../kernel/searchAttributes.ts';
import { runWorkflow } from './run.ts';
import { CONTROL_TASK_QUEUE, runWorkflowId } from '../kernel/workflowNames.ts';

/**
 * Runs a study's runs, each as the child run workflow `run-<run_id>` a lone run would
 * have, keeping no more than `window` in flight (the account's concurrency, so none waits
 * for a slot it cannot get and none is dropped); returns when every one has ended. Runs
 * are passed by id; their outcomes are read from Postgres, never carried here.
 */
export async function runChildren(account: string, runs: Array<{ runId: string; ref: string }>, window: number): Promise<void> {
  const inFlight = new Map<string, Promise<void>>();
  let next = 0;
  while (next < runs.length || inFlight.size > 0) {
    while (next < runs.length && inFlight.size < window) {
      const { runId, ref } = runs[next++]!;
      // Every free slot is filled in the same workflow task: awaiting each start would
      // cost a round trip per run and cap a study at about ten starts a second.
      const ended = executeChild(runWorkflow, {
        workflowId: runWorkflowId(runId),
        args: [{ runId }],
        taskQueue: CONTROL_TASK_QUEUE,
        typedSearchAttributes: workflowSearchAttributes({ account, kind: 'managed', ref }),
        // A run outlives a study's workflow that is terminated by an operator: it still
        // ends truthfully and settles its own reservation.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      }).then(() => undefined, (err: unknown) => {
        // A run's workflow records its own ending; one that failed, or that only this
        // workflow should have started but existed already, just frees its place here.
        log.warn('run workflow of a study ended badly or was already started', { runId, error: String(err) });
      });
      inFlight.set(runId, ended.finally(() => inFlight.delete(runId)));
    }
    await Promise.race(inFlight.values());
  }
}

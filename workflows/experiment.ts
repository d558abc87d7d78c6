import { proxyActivities, startChild, log, ParentClosePolicy, ChildWorkflowCancellationType, WorkflowIdReusePolicy } from '@temporalio/workflow';
import { workflowSearchAttributes } from './searchAttributes.ts';
import type { ExperimentActivities } from '../activities/experiments.ts';
import { runWorkflow } from './run.ts';
import { CONTROL_TASK_QUEUE, runWorkflowId } from './constants.ts';

const control = proxyActivities<ExperimentActivities>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 20 } });

/**
 * One study, workflow id `experiment-<id>`: starts exactly its runs, each as the child
 * run workflow `run-<run_id>` a lone run would have, keeping no more in flight than the
 * account may run at once (so none waits for a slot it cannot get and none is dropped),
 * then, when every run is terminal, stores the comparison and marks the study completed.
 * Runs are passed by id; their outcomes are read from Postgres, never carried here.
 */
export async function experimentWorkflow(args: { experimentId: string }): Promise<string> {
  const { account, runs, window } = await control.experimentSchedule(args.experimentId);
  const inFlight = new Map<string, Promise<void>>();
  let next = 0;
  while (next < runs.length || inFlight.size > 0) {
    while (next < runs.length && inFlight.size < window) {
      const { runId, ref } = runs[next++]!;
      const child = await startChild(runWorkflow, {
        workflowId: runWorkflowId(runId),
        args: [{ runId }],
        taskQueue: CONTROL_TASK_QUEUE,
        typedSearchAttributes: workflowSearchAttributes({ account, kind: 'managed', ref }),
        // A run outlives a study's workflow that is terminated by an operator: it still
        // ends truthfully and settles its own reservation.
        parentClosePolicy: ParentClosePolicy.ABANDON,
        cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      }).catch((err: unknown) => {
        // Only this workflow starts its runs' workflows; should one exist anyway, that
        // workflow owns the run's ending and the study does not wait for it here.
        log.warn('run workflow of a study was already started', { runId, error: String(err) });
        return null;
      });
      if (!child) continue;
      inFlight.set(runId, child.result().then(() => undefined, () => undefined).finally(() => inFlight.delete(runId)));
    }
    await Promise.race(inFlight.values());
  }
  await control.finishExperiment(args.experimentId);
  return 'completed';
}

import { proxyActivities } from '@temporalio/workflow';
import type { PetabActivities, PetabInspection } from '../activities/petab/activities.ts';
import { computeTaskQueue } from '../kernel/workflowNames.ts';

const compute = proxyActivities<PetabActivities>({
  taskQueue: computeTaskQueue('cpu-small'),
  // A short workflow the api awaits: a queue nobody serves fails it rather than holding the request.
  scheduleToStartTimeout: '1 minute',
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['toolkit_unavailable', 'sandbox_unavailable', 'cancelled'] },
});

/**
 * Workflow `petab-inspect-<digest>`: the petab library's lint of a problem an import plan
 * brings and, when it finds no error, the problem's description and its value at nominal,
 * from one sandboxed process on a compute worker (the plan's findings come from it).
 */
export async function petabInspectWorkflow(args: Parameters<PetabActivities['inspectPetabProblem']>[0]): Promise<PetabInspection> {
  return compute.inspectPetabProblem(args);
}

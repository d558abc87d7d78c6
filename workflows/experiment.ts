import { proxyLocalActivities, proxyActivities } from '@temporalio/workflow';
import type { ExperimentActivities } from '../activities/experiments.ts';
import { runChildren } from './childRuns.ts';

// Reading the schedule is one short query: a local activity, no round trip through the server.
const local = proxyLocalActivities<ExperimentActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });
// Storing the comparison renders a chart and writes two objects: a regular activity.
const control = proxyActivities<ExperimentActivities>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 20 } });

/**
 * One study of arms, workflow id `experiment-<id>`: starts exactly its runs (runChildren),
 * then, when every run is terminal, stores the comparison and marks the study completed.
 */
export async function experimentWorkflow(args: { experimentId: string }): Promise<string> {
  const { account, runs, window } = await local.experimentSchedule(args.experimentId);
  await runChildren(account, runs, window);
  await control.finishExperiment(args.experimentId);
  return 'completed';
}

import { proxyLocalActivities, proxyActivities, patched } from '@temporalio/workflow';
import type { ExperimentActivities } from '../activities/experiments.ts';
import { runChildren } from './childRuns.ts';
import { runBatches, hearRunCancels } from './studyBatches.ts';

/**
 * Comparisons from this version on execute their runs in batches (studyBatches.ts), as
 * studies do, instead of a child run workflow each.
 */
const RUNS_IN_BATCHES = 'experiment-runs-in-batches';

// Reading the schedule is one short query: a local activity, no round trip through the server.
const local = proxyLocalActivities<ExperimentActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });
// Storing the comparison renders a chart and writes two objects: a regular activity.
const control = proxyActivities<ExperimentActivities>({ startToCloseTimeout: '2 minutes', retry: { maximumAttempts: 20 } });

/**
 * One study of arms, workflow id `experiment-<id>`: executes exactly its runs, in batches
 * of one arm's runs within the account's concurrency (a comparison started before batches
 * ran a child run workflow each), then, when every run is terminal, stores the comparison
 * and marks the study completed.
 */
export async function experimentWorkflow(args: { experimentId: string }): Promise<string> {
  const cancels = hearRunCancels();
  const { account, runs, window } = await local.experimentSchedule(args.experimentId);
  if (patched(RUNS_IN_BATCHES)) {
    // Arms may differ in compute profile and limits: a batch holds one arm's runs.
    const armOf = new Map(runs.map((r) => [r.runId, r.arm ?? 0]));
    await runBatches(account, runs.map((r) => r.runId), window, cancels, undefined, (runId) => armOf.get(runId)!);
  } else await runChildren(account, runs, window);
  await control.finishExperiment(args.experimentId);
  return 'completed';
}

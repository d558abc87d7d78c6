import { proxyLocalActivities, proxyActivities, patched } from '@temporalio/workflow';
import type { ExperimentActivities } from '../activities/experiments.ts';
import { runChildren } from './childRuns.ts';
import { runBatches, hearRunCancels } from './studyBatches.ts';
import { explained } from './explain.ts';

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
  const progress = { status: 'running', runs: 0, completed: 0, not_completed: 0 };
  const tell = explained(() => ({ object: 'experiment', experiment_id: args.experimentId, ...progress }), (v) => (v.status === 'running'
    ? `**Running**: ${v.completed + v.not_completed} of ${v.runs} runs ended, ${v.completed} completed, ${v.not_completed} did not.`
    : `**${v.status === 'comparing' ? 'Storing the comparison' : 'Completed'}**: ${v.completed} of ${v.runs} runs completed.`));
  const { account, runs, window } = await local.experimentSchedule(args.experimentId);
  progress.runs = runs.length;
  tell();
  if (patched(RUNS_IN_BATCHES)) {
    // Arms may differ in compute profile and limits: a batch holds one arm's runs.
    const armOf = new Map(runs.map((r) => [r.runId, r.arm ?? 0]));
    const notCompleted = new Set<string>();
    await runBatches(account, runs.map((r) => r.runId), window, cancels, (done, others) => {
      progress.completed += done;
      for (const id of others) notCompleted.add(id);
      progress.not_completed = notCompleted.size;
      tell();
    }, (runId) => armOf.get(runId)!);
  } else await runChildren(account, runs, window);
  progress.status = 'comparing';
  tell();
  await control.finishExperiment(args.experimentId);
  progress.status = 'completed';
  tell();
  return 'completed';
}

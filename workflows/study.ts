import { proxyLocalActivities, proxyActivities, continueAsNew, workflowInfo, patched, setCurrentDetails, setHandler } from '@temporalio/workflow';
import { stateQuery } from './explain.ts';
import type { StudyActivities } from '../activities/studies/studies.ts';
import { runChildren } from './childRuns.ts';
import { runBatches, hearRunCancels } from './studyBatches.ts';

/**
 * Studies from this version on execute their runs in batches, a few seconds of runs per
 * compute activity (studyBatches.ts), instead of a child run workflow each.
 */
const RUNS_IN_BATCHES = 'study-runs-in-batches';

/**
 * Studies from this version on take their batch's runs a page at a time (a 100,000-run
 * sample's ids would outgrow a Temporal payload), and may continue as new between pages.
 */
const RUNS_PAGED = 'study-runs-paged';

/** Run ids one page holds: about 370 KiB. */
export const RUN_PAGE = 10_000;

const local = proxyLocalActivities<StudyActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });
// Asking, telling and finishing call the analysis environment (a Python process): regular
// activities that heartbeat while they work, so one lost with its worker is retried within
// the heartbeat timeout rather than at the end of its start-to-close.
const control = proxyActivities<StudyActivities>({ startToCloseTimeout: '10 minutes', heartbeatTimeout: '20 seconds', retry: { maximumAttempts: 20 } });

/** Past this many events the workflow continues as new between batches. */
export const STUDY_HISTORY_BOUND = 4000;

/**
 * A study that answers a question (sensitivity or calibration), workflow id
 * `experiment-<id>`: asks for a batch of parameter sets (each given to one of the study's
 * accepted runs, in Postgres, before any starts), runs them in batches within the
 * account's concurrency (a study started before batches ran a child run workflow each),
 * tells their results, and repeats until the design, the
 * budget, a convergence rule or closing the study stops it; then stores the analysis.
 * The optimizer's state lives in Postgres between batches (experiment_points), so a
 * continued-as-new or replayed workflow asks exactly what it asked before.
 */
export async function studyWorkflow(args: { experimentId: string; batch?: number; offset?: number; historyBound?: number; runPage?: number }): Promise<string> {
  const cancels = hearRunCancels();
  const { account, ref, window } = await local.studySchedule(args.experimentId);
  const bound = args.historyBound ?? STUDY_HISTORY_BOUND;
  const page = args.runPage ?? RUN_PAGE;
  const view = { object: 'experiment', experiment_id: args.experimentId, status: 'running', batch: (args.batch ?? 0) + 1, batch_runs: 0, runs: null as number | null, completed: null as number | null, not_completed: null as number | null };
  setHandler(stateQuery, () => ({ ...view }));
  const overBound = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > bound;
  for (let batch = args.batch ?? 0; ; batch++) {
    setCurrentDetails(`Asking for batch ${batch + 1}.`);
    const paged = patched(RUNS_PAGED);
    // A study continued as new between pages resumes its batch where it was.
    let offset = paged && batch === args.batch ? args.offset ?? 0 : 0;
    let asked = await (paged ? control.studyAsk(args.experimentId, batch, { offset, limit: page }) : control.studyAsk(args.experimentId, batch));
    if (!asked.runIds.length && !offset) break;
    const { standing } = asked;
    const batchRuns = asked.runs ?? asked.runIds.length;
    // Where the study stands, for operators (the Temporal UI's current details).
    let completed = standing?.completed ?? 0;
    const notCompleted = new Set<string>();
    const show = (doing: string) => {
      const others = (standing?.notCompleted ?? 0) + notCompleted.size;
      Object.assign(view, { batch: batch + 1, batch_runs: batchRuns, runs: standing?.runs ?? null, completed: standing ? completed : null, not_completed: standing ? others : null });
      const ended = standing ? `\n\n${completed + others} of ${standing.runs} runs ended: ${completed} completed, ${others} did not.` : '';
      setCurrentDetails(`**Batch ${batch + 1}** (${batchRuns} runs): ${doing}.${ended}`);
    };
    show('running');
    for (;;) {
      if (patched(RUNS_IN_BATCHES)) {
        await runBatches(account, asked.runIds, window, cancels, (done, others) => {
          completed += done;
          for (const id of others) notCompleted.add(id);
          show('running');
        });
      } else await runChildren(account, asked.runIds.map((runId) => ({ runId, ref })), window);
      if (!paged) break;
      offset += asked.runIds.length;
      if (offset >= batchRuns) break;
      if (overBound()) await continueAsNew<typeof studyWorkflow>({ ...args, batch, offset });
      asked = await control.studyAsk(args.experimentId, batch, { offset, limit: page });
    }
    show('telling the results');
    await control.studyTell(args.experimentId, batch);
    if (overBound()) {
      await continueAsNew<typeof studyWorkflow>({ ...args, batch: batch + 1, offset: 0 });
    }
  }
  view.status = 'analysing';
  setCurrentDetails('Analysing what the runs found.');
  await control.finishStudy(args.experimentId);
  view.status = 'completed';
  setCurrentDetails('Completed: the analysis is stored.');
  return 'completed';
}

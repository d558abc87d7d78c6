import {
  proxyActivities, proxyLocalActivities, sleep, condition, CancellationScope, isCancellation, ActivityFailure, ApplicationFailure, TimeoutFailure, ActivityCancellationType,
  defineSignal, setHandler, patched,
} from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs.ts';
import type { BatchActivities, BatchResult } from '../activities/execution/batch.ts';
import { computeTaskQueue, WORKER_SHUTDOWN } from '../kernel/workflowNames.ts';
import { oneAtATime } from './serial.ts';
import { fairShare } from '../kernel/fairShares.ts';

/** Runs one batch activity is given at most. */
export const BATCH_RUNS = 50;
/** How long a batch takes new runs before it gives its slot back to the queue. */
export const BATCH_SECONDS = 1;
/** How many worker shutdowns a run may be moved across before it fails (as a lone run's). */
const MAX_SHUTDOWN_RESTARTS = 20;

/**
 * Batches scheduled from this version on say which runs they execute, on the UI's
 * timeline and its "Events with Metadata" (an activity's summary), instead of only
 * `executeRuns`.
 */
const BATCH_SUMMARIES = 'batch-activity-summaries';

const control = proxyLocalActivities<RunActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });

/** One of the study's runs was asked to cancel while it executes: its ending is the study's to record. */
export const runCancelledSignal = defineSignal<[runId: string]>('runCancelled');

/** What runBatches hears of its runs' cancels. */
export interface RunCancels { take(): string[]; pending(): boolean }

/** Listens for runCancelledSignal; call before the workflow's first await, so no signal is missed. */
export function hearRunCancels(): RunCancels {
  const cancelled: string[] = [];
  setHandler(runCancelledSignal, (runId) => { cancelled.push(runId); });
  return { take: () => cancelled.splice(0), pending: () => cancelled.length > 0 };
}

/**
 * Executes a study's runs in batches (activities/execution/batch.ts): `window` batches in
 * flight (the account's concurrency), each a few seconds of runs over one warm parent,
 * what a batch did not reach going back to the front of the line. A run cancelled while it
 * executes is ended here at once (`cancels` hears of it), as a lone run's workflow ends
 * its run whatever state its execution is in; a batch lost with its worker is retried and
 * resumes where it was; the platform's failure fails the run it was at, nothing charged.
 * Returns when every run has ended; `tally` hears of each run ended, as it ends.
 *
 * `groupOf` tells which runs share a schedule (compute profile and limits: a comparison's
 * arms may differ, a study's runs do not); a batch holds runs of one group only.
 */
export async function runBatches(
  account: string, runIds: string[], window: number, cancels: RunCancels,
  tally: (completed: number, notCompleted: string[]) => void = () => undefined,
  groupOf: (runId: string) => string | number = () => 0,
): Promise<void> {
  if (!runIds.length) return;
  const serial = oneAtATime();
  // Each group's schedule, read from its first run, in the order the groups first appear.
  const computeOf = new Map<string | number, ReturnType<typeof proxyActivities<BatchActivities>>>();
  for (const runId of runIds) {
    const group = groupOf(runId);
    if (computeOf.has(group)) continue;
    const schedule = await serial(() => control.runSchedule(runId));
    computeOf.set(group, proxyActivities<BatchActivities>({
      taskQueue: computeTaskQueue(schedule.profile),
      scheduleToStartTimeout: `${schedule.scheduleToStartSeconds} seconds`,
      // A batch starts no run past its budget, and the last one it started may take its whole runtime.
      startToCloseTimeout: `${BATCH_SECONDS + schedule.maxRuntimeSeconds + 120} seconds`,
      heartbeatTimeout: '20 seconds',
      retry: { maximumAttempts: 3 },
      cancellationType: ActivityCancellationType.TRY_CANCEL,
      // Studies started before fair shares carry none of their own.
      priority: fairShare(account),
    }));
  }
  let line = [...runIds];
  /** Up to `n` runs from the line, in order, all of the first run's group. */
  const take = (n: number): string[] => {
    const group = groupOf(line[0]!);
    const taken: string[] = [];
    const rest: string[] = [];
    for (const id of line) (taken.length < n && groupOf(id) === group ? taken : rest).push(id);
    line = rest;
    return taken;
  };
  const moved = new Map<string, number>();
  const endRuns = async (ids: string[], ending: Parameters<RunActivities['endRuns']>[1]) => tally(0, await serial(() => control.endRuns(ids, ending)));

  async function batch(ids: string[]): Promise<Pick<BatchResult, 'left' | 'waiting'>> {
    try {
      const execute = computeOf.get(groupOf(ids[0]!))!.executeRuns;
      const work = { runIds: ids, budgetSeconds: BATCH_SECONDS };
      const summary = `${ids.length} ${ids.length === 1 ? 'run' : 'runs'}, from run ${ids[0]}, for up to ${BATCH_SECONDS} s`;
      // A worker of an older release may answer without a count: none is counted then.
      const done: Pick<BatchResult, 'left' | 'waiting'> & Partial<BatchResult> = await (patched(BATCH_SUMMARIES) ? execute.executeWithOptions({ summary }, [work]) : execute(work));
      tally(done.completed ?? 0, done.notCompleted ?? []);
      return done;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START') {
        await endRuns(ids, { status: 'failed', error: { code: 'capacity_unavailable', message: 'No worker for this compute profile picked the run up in time; nothing was charged.' } });
        return { left: [], waiting: false };
      }
      const open = await serial(() => control.openRuns(ids));
      if (!open.length) return { left: [], waiting: false };
      // A worker's shutdown moves the batch to another, without using up its attempts.
      const times = (moved.get(open[0]!) ?? 0) + 1;
      moved.set(open[0]!, times);
      if (cause instanceof ApplicationFailure && cause.type === WORKER_SHUTDOWN && times <= MAX_SHUTDOWN_RESTARTS) return { left: open, waiting: false };
      // The platform failed, not the lab: the run the batch was at fails, nothing charged; the rest go on.
      const message = cause?.message ?? (err as Error).message ?? 'The run failed.';
      await endRuns([open[0]!], { status: 'failed', error: { code: 'internal_error', message } });
      return { left: open.slice(1), waiting: false };
    }
  }

  const lanes = Math.max(1, window);
  let executing = 0;
  /**
   * One of the account's `window` places: takes its share of the line among the places
   * not executing (so a calibration's 20 runs go to every place, not one), and stays
   * while any batch may still give runs back.
   */
  async function lane(): Promise<void> {
    for (let wait = 0; ;) {
      await condition(() => line.length > 0 || executing === 0);
      if (!line.length) return;
      const share = Math.ceil(line.length / (lanes - executing));
      executing += 1;
      const { left, waiting } = await batch(take(Math.min(BATCH_RUNS, share))).finally(() => { executing -= 1; });
      line.unshift(...left);
      // Every slot of the account is taken (its lone runs too): ask again a little later.
      wait = waiting ? Math.min(Math.max(1, wait * 2), 10) : 0;
      if (wait) await sleep(`${wait} seconds`);
    }
  }

  let done = false;
  try {
    const all = Promise.all(Array.from({ length: lanes }, lane)).finally(() => { done = true; });
    all.catch(() => undefined); // awaited below
    for (;;) {
      await condition(() => done || cancels.pending());
      const cancelled = cancels.take();
      if (cancelled.length) await endRuns(cancelled, { status: 'cancelled', error: null });
      else break;
    }
    await all;
  } catch (err) {
    // The study's workflow cancelled: its runs end cancelled, as lone runs' would.
    if (isCancellation(err)) await CancellationScope.nonCancellable(() => serial(() => control.endRuns(runIds, { status: 'cancelled', error: null })));
    throw err;
  }
}

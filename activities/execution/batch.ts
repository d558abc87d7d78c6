import { Context } from '@temporalio/activity';
import { acquireRunSlot, finishRun } from '../../storage/runLifecycle.ts';
import { throwIfActivityStopped, type ExecutedRun } from './execute.ts';
import type { Db } from '../../storage/db/knex.ts';
import type { LoneRunWatch } from '../../storage/db/loneRunWatch.ts';

/**
 * What a batch did: how many runs it saw complete and which ended otherwise; the runs it
 * did not reach, in order; and whether the account's slots were all taken.
 */
export interface BatchResult {
  left: string[];
  waiting: boolean;
  completed: number;
  notCompleted: string[];
}

/**
 * How long after a lone run's acceptance a batch on its queue gives its slot back: long
 * enough for the run's own task to reach the queue (its workflow starts and schedules it),
 * so the slot freed is there for it rather than for the next batch.
 */
export const LONE_RUN_SETTLE_MS = 200;

/**
 * A study's runs executed one after another by one activity on the profile's compute
 * queue, over the warm parent of their key: each run takes its account slot, executes
 * through a lone run's own execution (`executeRun`, given) and records its ending with
 * its outputs, so its record is a lone run's. No Temporal workflow per run: a 10,000-run
 * study is a few hundred of these, not 10,000 workflows.
 *
 * A run's ending (its results stored, its settlement) is written while the next run's lab
 * executes: the slot is the lab's process, and a run's start and ending are round trips
 * to Postgres and the object store that would leave a core idle. One ending at most is
 * behind the lab that runs, and only while the account has a slot for the next run; an
 * activity never returns (nor fails) with an ending unwritten.
 */
export function createBatchActivities(deps: { db: Db; maxConcurrentRuns: number; executeRun: (runId: string, labDone: () => void) => Promise<ExecutedRun>; loneRuns?: LoneRunWatch }) {
  return {
    /**
     * Executes `runIds` in order until done or past `budgetSeconds` (at least one run
     * each time), then gives the rest back, so the slot returns to the queue where other
     * accounts' work waits; sooner, after the run it is at, when a lone run was accepted
     * on its queue since the batch began (its start then waits for a run, not a batch;
     * each batch gives its slot back once per lone run, so a stream of them costs a
     * study a few more batches, not many). A run already ended is passed over, so a retry after a lost
     * worker resumes where the batch was and runs none twice; a run whose slot cannot be
     * had ends the batch with `waiting`.
     */
    async executeRuns(input: { runIds: string[]; budgetSeconds: number }): Promise<BatchResult> {
      const ctx = Context.current();
      const began = Date.now();
      const ended = { completed: 0, notCompleted: [] as string[] };
      const queue = ctx.info.taskQueue;
      const giveBack = () => Date.now() - began >= input.budgetSeconds * 1000 || (deps.loneRuns?.acceptedSince(queue, began, LONE_RUN_SETTLE_MS) ?? false);
      /** Runs begun and not yet recorded as ended; `behind` is the one whose lab is done. */
      const open = new Set<Promise<void>>();
      let behind: Promise<void> | null = null;
      const caughtUp = async () => {
        const ending = behind;
        behind = null;
        await ending;
      };
      const run = async (runId: string, labDone: () => void) => {
        const result = await deps.executeRun(runId, labDone);
        if (result.status === 'skipped') return;
        const status = await finishRun(deps.db, { runId, status: result.status, error: result.error ?? null, computeSeconds: result.computeSeconds, outputs: result.outputs ?? null });
        if (status === 'completed') ended.completed += 1;
        else ended.notCompleted.push(runId);
      };
      try {
        for (let i = 0; i < input.runIds.length; i++) {
          if (i > 0 && giveBack()) {
            await caughtUp();
            return { left: input.runIds.slice(i), waiting: false, ...ended };
          }
          throwIfActivityStopped();
          ctx.heartbeat();
          const runId = input.runIds[i]!;
          let slot = await acquireRunSlot(deps.db, runId, deps.maxConcurrentRuns);
          // The run behind holds a slot of the account until its ending is written.
          if (slot === 'wait' && behind) {
            await caughtUp();
            slot = await acquireRunSlot(deps.db, runId, deps.maxConcurrentRuns);
          }
          if (slot === 'wait') return { left: input.runIds.slice(i), waiting: true, ...ended };
          // Ended meanwhile (cancelled while it waited, or by a batch before a retry).
          if (slot !== 'running' && slot !== 'cancelling') continue;
          let labDone!: () => void;
          const lab = new Promise<void>((resolve) => { labDone = resolve; });
          const whole = run(runId, labDone);
          open.add(whole);
          // Awaited below, or once the next run's lab is done: a failure meanwhile is not unhandled.
          whole.then(() => open.delete(whole), () => open.delete(whole));
          await Promise.race([lab, whole]);
          await caughtUp();
          behind = whole;
        }
        await caughtUp();
        return { left: [], waiting: false, ...ended };
      } catch (err) {
        // What failed is this activity's error, once every run it began has ended or failed too.
        await Promise.allSettled(open);
        throw err;
      }
    },
  };
}

export type BatchActivities = ReturnType<typeof createBatchActivities>;

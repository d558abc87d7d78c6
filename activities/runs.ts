import type { Db } from '../storage/db/knex.ts';
import { acquireRunSlot, finishRun, type Finish } from '../storage/runLifecycle.ts';
import { runPrepared, statement } from '../storage/db/prepared.ts';
import { openRunsOf } from '../storage/db/runs.ts';
import type { RunSchedule } from '../kernel/runSchedule.ts';

/** Control-queue activities of a run: its plan of work, slot, and ending. */
export function createRunActivities(deps: { db: Db; maxConcurrentRuns: number }) {
  return {
    /** What the workflow needs to schedule the run. */
    async runSchedule(runId: string): Promise<RunSchedule> {
      const [row] = await runPrepared<{ profile: string; max_runtime_seconds: number; schedule_to_start_seconds: number }>(deps.db, RUN_SCHEDULE, [runId]);
      if (!row) throw new Error(`no run ${runId}`);
      return { profile: row.profile, maxRuntimeSeconds: row.max_runtime_seconds, scheduleToStartSeconds: row.schedule_to_start_seconds };
    },
    async acquireSlot(runId: string): Promise<string> {
      return acquireRunSlot(deps.db, runId, deps.maxConcurrentRuns);
    },
    async finish(f: Finish): Promise<string> {
      return finishRun(deps.db, f);
    },
    /** Of a study's batch, the runs not ended yet, in order. */
    async openRuns(runIds: string[]): Promise<string[]> {
      return openRunsOf(deps.db, runIds);
    },
    /**
     * Ends each run of `runIds` not ended yet, as a lone run's workflow would have: a
     * cancelled one is charged for the time it ran (none if it never began), a failed one
     * (the platform's failure) nothing. Returns those it ended.
     */
    async endRuns(runIds: string[], ending: Pick<Finish, 'status' | 'error'>): Promise<string[]> {
      const open = await openRunsOf(deps.db, runIds);
      for (const runId of open) await finishRun(deps.db, { runId, ...ending, computeSeconds: ending.status === 'cancelled' ? null : 0 });
      return open;
    },
  };
}

const RUN_SCHEDULE = statement('run-schedule', `
  SELECT p.id AS profile, r.max_runtime_seconds, p.schedule_to_start_seconds
    FROM runs r JOIN compute_profiles p ON p.id = r.compute_profile WHERE r.id = $1`);

export type RunActivities = ReturnType<typeof createRunActivities>;

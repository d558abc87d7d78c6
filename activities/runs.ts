import type { Db } from '../storage/db/knex.ts';
import { getRun } from '../storage/db/runs.ts';
import { getComputeProfile } from '../storage/db/computeProfiles.ts';
import { acquireRunSlot, finishRun, type Finish } from '../storage/runLifecycle.ts';

/** Control-queue activities of a run: its plan of work, slot, and ending. */
export function createRunActivities(deps: { db: Db; maxConcurrentRuns: number }) {
  return {
    /** What the workflow needs to schedule the run. */
    async runSchedule(runId: string): Promise<{ profile: string; maxRuntimeSeconds: number; scheduleToStartSeconds: number }> {
      const run = await getRun(deps.db, runId);
      if (!run) throw new Error(`no run ${runId}`);
      const profile = (await getComputeProfile(deps.db, run.compute_profile))!;
      return { profile: profile.id, maxRuntimeSeconds: run.max_runtime_seconds, scheduleToStartSeconds: profile.schedule_to_start_seconds };
    },
    async acquireSlot(runId: string): Promise<string> {
      return acquireRunSlot(deps.db, runId, deps.maxConcurrentRuns);
    },
    async finish(f: Finish): Promise<string> {
      return (await finishRun(deps.db, f)).status;
    },
  };
}

export type RunActivities = ReturnType<typeof createRunActivities>;

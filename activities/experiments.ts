import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { completeExperiment, experimentRunOrder, getExperiment } from '../storage/db/experiments.ts';
import { armOutcomes } from '../storage/db/armOutcomes.ts';
import { compareArms } from '../storage/experimentComparison.ts';
import { storeComparisonArtifacts } from '../storage/experimentArtifacts.ts';

/** Control-queue activities of a study: its order of runs, and its ending. */
export function createExperimentActivities(deps: { db: Db; objects: ObjectStore; maxConcurrentRuns: number }) {
  return {
    /**
     * The study's runs in start order, and how many to keep in flight: the account's
     * concurrency limit, so a run is started when a slot is there for it rather than
     * started to wait.
     */
    async experimentSchedule(experimentId: string): Promise<{ account: string; runs: Array<{ runId: string; ref: string; arm?: number }>; window: number }> {
      const e = await getExperiment(deps.db, experimentId);
      if (!e) throw new Error(`no experiment ${experimentId}`);
      // `arm` is optional only in what workflows started before batches recorded.
      const runs = (await experimentRunOrder(deps.db, experimentId)).map((r) => ({ runId: r.run_id, ref: e.arms[r.arm_index]!.resolved_ref, arm: r.arm_index }));
      return { account: e.account_id, runs, window: Math.max(1, deps.maxConcurrentRuns) };
    },

    /** Every run is terminal: store the comparison's CSV and chart, and mark the study completed. */
    async finishExperiment(experimentId: string): Promise<void> {
      const e = await getExperiment(deps.db, experimentId);
      if (!e) throw new Error(`no experiment ${experimentId}`);
      await storeComparisonArtifacts(deps, e, compareArms(e.arms, await armOutcomes(deps.db, experimentId, e.arms)));
      await completeExperiment(deps.db, experimentId);
    },
  };
}

export type ExperimentActivities = ReturnType<typeof createExperimentActivities>;

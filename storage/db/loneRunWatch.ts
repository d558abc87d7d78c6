import type { NotificationListener } from './notifications.ts';
import { computeTaskQueue } from '../../kernel/workflowNames.ts';

export const LONE_RUNS_CHANNEL = 'silico_lone_runs';

/** When runs accepted on their own last came, by the compute task queue they wait on. */
export interface LoneRunWatch {
  /**
   * Whether a lone run was accepted on `taskQueue` after `since` (ms since the epoch), at
   * least `settledMs` ago: time for its own task to reach the queue, so a slot given back
   * then is there for it rather than for the next batch.
   */
  acceptedSince(taskQueue: string, since: number, settledMs: number): boolean;
}

/**
 * Hears migration 053's notices of runs accepted on their own. A notice missed (the
 * listener down) costs only fairness: the batches then give their slots back at the end
 * of their budget, as before.
 */
export function createLoneRunWatch(listener: NotificationListener): LoneRunWatch {
  const last = new Map<string, number>();
  listener.on(LONE_RUNS_CHANNEL, (profile) => last.set(computeTaskQueue(profile), Date.now()));
  return {
    acceptedSince(taskQueue, since, settledMs) {
      const at = last.get(taskQueue);
      return at !== undefined && at > since && Date.now() - at >= settledMs;
    },
  };
}

import type { NotificationListener } from './notifications.ts';
import { computeTaskQueue } from '../../kernel/workflowNames.ts';

export const LONE_RUNS_CHANNEL = 'silico_lone_runs';

/** When runs accepted on their own last came, by the compute task queue they wait on. */
export interface LoneRunWatch {
  /** Whether a lone run was accepted on `taskQueue` within the last `ms`. */
  acceptedWithin(taskQueue: string, ms: number): boolean;
}

/**
 * Hears migration 053's notices of runs accepted on their own. A notice missed (the
 * listener down) costs only fairness: the batches then give their slots back at the end
 * of their budget, as before.
 */
export function createLoneRunWatch(listener: NotificationListener): LoneRunWatch {
  const last = new Map<string, number>();
  listener.on(LONE_RUNS_CHANNEL, (profile) => last.set(computeTaskQueue(profile), Date.now()));
  return { acceptedWithin: (taskQueue, ms) => Date.now() - (last.get(taskQueue) ?? -Infinity) <= ms };
}

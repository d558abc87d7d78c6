import type { Db } from './knex.ts';
import type { NotificationListener } from './notifications.ts';

export const RUN_CANCELS_CHANNEL = 'silico_run_cancels';

/** How often watched runs are read while notices may be missed (the listener is down). */
const FALLBACK_POLL_MS = 1000;

export interface RunCancelWatch {
  /** Calls `onCancel` once when the run becomes `cancelling`; the returned function stops watching. */
  watch(runId: string, onCancel: () => void): () => void;
  close(): void;
}

/**
 * Tells the worker executing a run that it was cancelled, at once: migration 034's trigger
 * notifies RUN_CANCELS_CHANNEL with the run id when it becomes `cancelling`. Notices can
 * be missed while the listener is down, so then (and once it is back) the watched runs
 * are read from the table instead.
 */
export function createRunCancelWatch(db: Db, listener: NotificationListener): RunCancelWatch {
  const watchers = new Map<string, Set<() => void>>();
  const fire = (runId: string) => {
    const set = watchers.get(runId);
    watchers.delete(runId);
    for (const f of set ?? []) f();
  };
  const check = async () => {
    const ids = [...watchers.keys()];
    if (!ids.length) return;
    const cancelling: string[] = await db('runs').whereIn('id', ids).where({ status: 'cancelling' }).pluck('id').catch(() => []);
    cancelling.forEach(fire);
  };
  listener.on(RUN_CANCELS_CHANNEL, fire);
  listener.onState(() => void check());
  const poll = setInterval(() => {
    if (!listener.listening) void check();
  }, FALLBACK_POLL_MS);
  poll.unref();
  return {
    watch(runId, onCancel) {
      let set = watchers.get(runId);
      if (!set) watchers.set(runId, (set = new Set()));
      set.add(onCancel);
      return () => {
        const s = watchers.get(runId);
        s?.delete(onCancel);
        if (s && !s.size) watchers.delete(runId);
      };
    },
    close() {
      clearInterval(poll);
      watchers.clear();
    },
  };
}

import type { Db } from './knex.ts';
import type { NotificationListener } from './notifications.ts';

export const RUN_CANCELS_CHANNEL = 'silico_run_cancels';
export const INVOCATION_CANCELS_CHANNEL = 'silico_invocation_cancels';

/** How often watched records are read while notices may be missed (the listener is down). */
const FALLBACK_POLL_MS = 1000;

/** Tells the worker doing a piece of work (a run, a hosted invocation) that it was cancelled, at once. */
export interface CancelWatch {
  /** Calls `onCancel` once when the record is cancelled; the returned function stops watching. */
  watch(id: string, onCancel: () => void): () => void;
  close(): void;
}

/**
 * Tells the worker executing a run that it was cancelled, at once: migration 034's trigger
 * notifies RUN_CANCELS_CHANNEL with the run id when it becomes `cancelling`. Notices can
 * be missed while the listener is down, so then (and once it is back) the watched runs
 * are read from the table instead.
 */
export function createRunCancelWatch(db: Db, listener: NotificationListener): CancelWatch {
  return createCancelWatch(listener, RUN_CANCELS_CHANNEL, (ids) => db('runs').whereIn('id', ids).where({ status: 'cancelling' }).pluck('id'));
}

/** The same for hosted invocations: migration 042's trigger notifies when a cancellation is requested. */
export function createInvocationCancelWatch(db: Db, listener: NotificationListener): CancelWatch {
  return createCancelWatch(listener, INVOCATION_CANCELS_CHANNEL, (ids) => db('hosted_invocations').whereIn('id', ids).whereNotNull('cancel_requested_at').pluck('id'));
}

/** Watches ids on `channel`, reading `cancelled(ids)` instead while notices may be missed. */
function createCancelWatch(listener: NotificationListener, channel: string, cancelled: (ids: string[]) => Promise<string[]>): CancelWatch {
  const watchers = new Map<string, Set<() => void>>();
  const fire = (runId: string) => {
    const set = watchers.get(runId);
    watchers.delete(runId);
    for (const f of set ?? []) f();
  };
  const check = async () => {
    const ids = [...watchers.keys()];
    if (!ids.length) return;
    (await cancelled(ids).catch(() => [])).forEach(fire);
  };
  listener.on(channel, fire);
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

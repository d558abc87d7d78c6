import type { NotificationListener } from './notifications.ts';

export const RUN_EVENTS_CHANNEL = 'silico_run_events';

/** One follower of one run's events: `next` resolves when something may have been appended. */
export interface RunEventSubscription {
  /**
   * Resolves true as soon as an event of the run is noticed (at once if one was noticed
   * since the last call), or false after `idleMs`. While the listener is down it waits at
   * most `fallbackMs`, so followers fall back to polling rather than stall.
   */
  next(idleMs: number, fallbackMs?: number): Promise<boolean>;
  close(): void;
}

export interface RunEventWatcher {
  subscribe(runId: string): RunEventSubscription;
}

/**
 * Wakes the followers of a run when an event is appended to it (the insert trigger of
 * migration 015 notifies RUN_EVENTS_CHANNEL with the run id). Followers subscribe
 * before they read, so an event committed between their read and their wait is never
 * slept through. A dropped or restored listener wakes everyone: notices may have been
 * missed in between.
 */
export function createRunEventWatcher(listener: NotificationListener): RunEventWatcher {
  const byRun = new Map<string, Set<Sub>>();
  class Sub implements RunEventSubscription {
    private pending = false;
    private wake: (() => void) | undefined;
    private readonly runId: string;
    constructor(runId: string) {
      this.runId = runId;
    }
    notify(): void {
      this.pending = true;
      this.wake?.();
    }
    async next(idleMs: number, fallbackMs = 500): Promise<boolean> {
      if (!this.pending) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, listener.listening ? idleMs : Math.min(idleMs, fallbackMs));
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
      const noticed = this.pending;
      this.pending = false;
      return noticed;
    }
    close(): void {
      const set = byRun.get(this.runId);
      set?.delete(this);
      if (set && !set.size) byRun.delete(this.runId);
      this.wake?.();
    }
  }
  listener.on(RUN_EVENTS_CHANNEL, (runId) => {
    for (const s of byRun.get(runId) ?? []) s.notify();
  });
  listener.onState(() => {
    for (const set of byRun.values()) for (const s of set) s.notify();
  });
  return {
    subscribe(runId) {
      const sub = new Sub(runId);
      let set = byRun.get(runId);
      if (!set) byRun.set(runId, (set = new Set()));
      set.add(sub);
      return sub;
    },
  };
}

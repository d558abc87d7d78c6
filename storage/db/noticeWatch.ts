import type { NotificationListener } from './notifications.ts';

/** Appended run events, by run id (the insert trigger of migration 015). */
export const RUN_EVENTS_CHANNEL = 'silico_run_events';

/** One follower of one record's notices: `next` resolves when it may have changed. */
export interface NoticeSubscription {
  /**
   * Resolves true as soon as a notice of the record comes (at once if one came since the
   * last call), or false after `idleMs`. While the listener is down it waits at most
   * `fallbackMs`, so followers fall back to polling rather than stall.
   */
  next(idleMs: number, fallbackMs?: number): Promise<boolean>;
  close(): void;
}

export interface NoticeWatcher {
  subscribe(id: string): NoticeSubscription;
}

/**
 * Wakes the followers of a record when `channel` carries its id (a run's appended event,
 * an invocation's ending). Followers subscribe before they read, so a change committed
 * between their read and their wait is never slept through. A dropped or restored
 * listener wakes everyone: notices may have been missed in between.
 */
export function createNoticeWatcher(listener: NotificationListener, channel: string): NoticeWatcher {
  const byId = new Map<string, Set<Sub>>();
  class Sub implements NoticeSubscription {
    private pending = false;
    private wake: (() => void) | undefined;
    private readonly id: string;
    constructor(id: string) {
      this.id = id;
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
      const set = byId.get(this.id);
      set?.delete(this);
      if (set && !set.size) byId.delete(this.id);
      this.wake?.();
    }
  }
  listener.on(channel, (id) => {
    for (const s of byId.get(id) ?? []) s.notify();
  });
  listener.onState(() => {
    for (const set of byId.values()) for (const s of set) s.notify();
  });
  return {
    subscribe(id) {
      const sub = new Sub(id);
      let set = byId.get(id);
      if (!set) byId.set(id, (set = new Set()));
      set.add(sub);
      return sub;
    },
  };
}

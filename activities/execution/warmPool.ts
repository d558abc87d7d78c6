import type { WarmInstance } from './warmInstance.ts';

export interface WarmPoolOptions<T extends WarmInstance = WarmInstance> {
  /** Starts one more instance of the deployment. */
  start: () => Promise<T>;
  /** Instances kept warm however idle (a ready deployment's `min_instances`). */
  min: number;
  /** Instances at most, busy or not (`max_instances`). */
  max: number;
  /** An instance above `min` unused this long is stopped. */
  idleSeconds: number;
  onError?: (err: unknown) => void;
}

export interface WarmLease<T extends WarmInstance = WarmInstance> {
  instance: T;
  /** Gives the instance back (or drops it when it died serving). */
  release(): void;
}

export interface WarmPool<T extends WarmInstance = WarmInstance> {
  /**
   * An idle instance, a new one while under `max`, or the next one freed (first come,
   * first served). Rejects with PoolClosed, with why no instance could start (when none
   * is there or starting), or on `signal`.
   */
  acquire(signal?: AbortSignal): Promise<WarmLease<T>>;
  stats(): { instances: number; busy: number; starting: number; waiting: number };
  /** Since when its longest-idle instance above `min` has been idle (Date.now()), or null when none is. */
  oldestIdle(): number | null;
  /** Stops its longest-idle instance above `min`; whether there was one. */
  shed(): boolean;
  /** Stops every instance; waiting callers are refused. */
  close(): Promise<void>;
}

/** The pool was closed (the deployment is no longer served by this worker). */
export class PoolClosed extends Error {
  constructor() {
    super('the deployment is no longer served here');
  }
}

interface Slot<T> { instance: T; busy: boolean; idleSince: number }

/**
 * The warm instances of one deployment on this worker: `min` kept ready (one that dies is
 * replaced), up to `max` under load, scaled back to `min` once idle. Every invocation gets
 * an instance to itself; callers past `max` wait their turn.
 */
export function createWarmPool<T extends WarmInstance = WarmInstance>(opts: WarmPoolOptions<T>): WarmPool<T> {
  type S = Slot<T>;
  const slots: S[] = [];
  const waiting: Array<{ resolve: (l: WarmLease<T>) => void; reject: (e: Error) => void }> = [];
  let starting = 0;
  let closed = false;

  const lease = (slot: S): WarmLease<T> => {
    slot.busy = true;
    return {
      instance: slot.instance,
      release: () => {
        slot.busy = false;
        slot.idleSince = Date.now();
        if (!slot.instance.alive()) drop(slot);
        else handOut(slot);
        topUp();
      },
    };
  };
  const drop = (slot: S) => {
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
  };
  /** A free instance goes to the first caller waiting, if any. */
  const handOut = (slot: S) => {
    const next = waiting.shift();
    if (next) next.resolve(lease(slot));
  };
  const grow = () => {
    starting += 1;
    opts.start().then((instance) => {
      starting -= 1;
      if (closed) return void instance.close();
      const slot: S = { instance, busy: false, idleSince: Date.now() };
      slots.push(slot);
      handOut(slot);
    }, (err) => {
      starting -= 1;
      opts.onError?.(err);
      // Nobody else will start one for a caller left waiting with nothing starting.
      if (!slots.length && !starting) for (const w of waiting.splice(0)) w.reject(err instanceof Error ? err : new Error(String(err)));
    });
  };
  /** Keeps `min` instances, and one starting for each caller waiting while under `max`. */
  const topUp = () => {
    if (closed) return;
    for (const s of [...slots]) if (!s.instance.alive()) drop(s);
    while (slots.length + starting < opts.min) grow();
    while (waiting.length > starting && slots.length + starting < opts.max) grow();
  };
  const reaper = setInterval(() => {
    const now = Date.now();
    for (const s of [...slots]) {
      if (slots.length <= opts.min) break;
      if (!s.busy && now - s.idleSince > opts.idleSeconds * 1000) {
        drop(s);
        void s.instance.close();
      }
    }
    topUp();
  }, Math.max(250, Math.min(opts.idleSeconds * 1000, 5000)));
  reaper.unref();
  const longestIdle = (): S | undefined => (slots.length > opts.min
    ? slots.filter((s) => !s.busy).sort((a, b) => a.idleSince - b.idleSince)[0]
    : undefined);
  topUp();

  return {
    acquire(signal) {
      if (closed) return Promise.reject(new PoolClosed());
      const idle = slots.find((s) => !s.busy && s.instance.alive());
      if (idle) return Promise.resolve(lease(idle));
      return new Promise<WarmLease<T>>((resolve, reject) => {
        const entry = { resolve, reject };
        waiting.push(entry);
        signal?.addEventListener('abort', () => {
          const i = waiting.indexOf(entry);
          if (i >= 0) waiting.splice(i, 1);
          reject(new Error('cancelled while waiting for a warm instance'));
        }, { once: true });
        topUp();
      });
    },
    oldestIdle: () => longestIdle()?.idleSince ?? null,
    shed() {
      const s = longestIdle();
      if (!s) return false;
      drop(s);
      void s.instance.close();
      return true;
    },
    stats: () => ({ instances: slots.length, busy: slots.filter((s) => s.busy).length, starting, waiting: waiting.length }),
    async close() {
      closed = true;
      clearInterval(reaper);
      for (const w of waiting.splice(0)) w.reject(new PoolClosed());
      await Promise.all(slots.splice(0).map((s) => s.instance.close()));
    },
  };
}

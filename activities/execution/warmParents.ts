import type { WarmInstance } from './warmInstance.ts';
import { createWarmPool, type WarmLease, type WarmPool } from './warmPool.ts';

export interface WarmParentsOptions {
  /** Parents at most on this worker, busy or idle: each holds an interpreter with the runtime imported. */
  max: number;
  /** Parents of one key at most (the runs of one key this worker executes at once). */
  perKey: number;
  /** A parent unused this long is stopped. */
  idleSeconds: number;
  /**
   * A key whose parent could not start has its runs executed cold for this long: each then
   * says itself why it cannot run, and a broken package does not cost a failed start per run.
   */
  coldSeconds: number;
  onError?(key: string, err: unknown): void;
}

export interface WarmParents<T extends WarmInstance = WarmInstance> {
  /**
   * A parent of `key` for one run: an idle one, else one started with `start` (the
   * longest-idle parent of another key is stopped to make room when the worker holds its
   * maximum). Null when none can be had within the bounds, or it failed to start: the run
   * executes cold. Rejects only on `signal`. A key's parents are all of one kind (a
   * lab's, the PEtab engine's): the key says which, so `U` is the same for every lease of it.
   */
  lease<U extends T>(key: string, start: () => Promise<U>, signal?: AbortSignal): Promise<WarmLease<U> | null>;
  stats(): { parents: number; busy: number; keys: number };
  close(): Promise<void>;
}

interface Entry<T extends WarmInstance> { pool: WarmPool<T>; start: () => Promise<T> }

/**
 * The warm parents of a worker's runs, by key: the runs of one key (account, compute
 * profile, environment lock, lab package) are forked from that key's parents and from no
 * other, so accounts never share one. Parents start on demand, are bounded in number per
 * key and per worker, and are stopped once idle; a key left without any is forgotten.
 */
export function createWarmParents<T extends WarmInstance>(opts: WarmParentsOptions): WarmParents<T> {
  const keys = new Map<string, Entry<T>>();
  const coldUntil = new Map<string, number>();
  let closed = false;

  const held = () => [...keys.values()].reduce((n, e) => n + e.pool.stats().instances + e.pool.stats().starting, 0);
  /** Stops the longest-idle parent of another key; whether there was one. */
  const makeRoom = (except: string): boolean => {
    let oldest: Entry<T> | undefined;
    let since = Infinity;
    for (const [k, e] of keys) {
      const idle = k === except ? null : e.pool.oldestIdle();
      if (idle !== null && idle < since) {
        since = idle;
        oldest = e;
      }
    }
    return oldest?.pool.shed() ?? false;
  };
  const forget = setInterval(() => {
    const now = Date.now();
    for (const [k, until] of coldUntil) if (until <= now) coldUntil.delete(k);
    for (const [k, e] of keys) {
      const s = e.pool.stats();
      if (!s.instances && !s.starting && !s.waiting) {
        keys.delete(k);
        void e.pool.close();
      }
    }
  }, Math.max(1000, opts.idleSeconds * 1000));
  forget.unref();

  return {
    async lease<U extends T>(key: string, start: () => Promise<U>, signal?: AbortSignal): Promise<WarmLease<U> | null> {
      if (closed || opts.max <= 0 || (coldUntil.get(key) ?? 0) > Date.now()) return null;
      let entry = keys.get(key);
      if (!entry) {
        const made: Entry<T> = {
          start,
          pool: createWarmPool<T>({
            min: 0, max: opts.perKey, idleSeconds: opts.idleSeconds,
            // The latest run's way to start one: the key fixes what it starts.
            start: () => made.start(),
            onError: (err) => opts.onError?.(key, err),
          }),
        };
        entry = made;
        keys.set(key, entry);
      }
      entry.start = start;
      const s = entry.pool.stats();
      const free = s.instances - s.busy;
      if (!free && s.instances + s.starting < opts.perKey && held() >= opts.max && !makeRoom(key)) return null;
      try {
        return await entry.pool.acquire(signal) as WarmLease<U>;
      } catch (err) {
        if (signal?.aborted) throw err;
        coldUntil.set(key, Date.now() + opts.coldSeconds * 1000);
        return null;
      }
    },
    stats() {
      const all = [...keys.values()].map((e) => e.pool.stats());
      return { parents: all.reduce((n, s) => n + s.instances, 0), busy: all.reduce((n, s) => n + s.busy, 0), keys: keys.size };
    },
    async close() {
      closed = true;
      clearInterval(forget);
      await Promise.all([...keys.values()].map((e) => e.pool.close()));
      keys.clear();
    },
  };
}

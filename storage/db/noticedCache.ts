import type { NotificationListener } from './notifications.ts';

interface CacheOptions { ttlMs?: number; max?: number }

/**
 * Reads kept in process while Postgres would say when they change: every change of what
 * they read notifies `channel` (a trigger), and the cache empties on each notice, so a
 * change applies at once in every process. Used only while the listener is listening (it
 * empties whenever that changes); misses are never kept; entries live at most `ttlMs` as
 * a backstop, `max` of them.
 */
export function noticedCache<V>(
  listener: NotificationListener, channel: string, read: (key: string) => Promise<V | undefined>, opts?: CacheOptions,
): (key: string) => Promise<V | undefined>;
/** A key of any shape is kept under `keyOf(key)`: equal keys must give equal strings. */
export function noticedCache<K, V>(
  listener: NotificationListener, channel: string, read: (key: K) => Promise<V | undefined>, opts: CacheOptions & { keyOf: (key: K) => string },
): (key: K) => Promise<V | undefined>;
export function noticedCache<K, V>(
  listener: NotificationListener, channel: string, read: (key: K) => Promise<V | undefined>, opts: CacheOptions & { keyOf?: (key: K) => string } = {},
): (key: K) => Promise<V | undefined> {
  const ttlMs = opts.ttlMs ?? 60_000;
  const max = opts.max ?? 10_000;
  const keyOf = opts.keyOf ?? String;
  const cache = new Map<string, { value: V; at: number }>();
  let generation = 0;
  const invalidate = () => {
    generation += 1;
    cache.clear();
  };
  listener.on(channel, invalidate);
  listener.onState(invalidate);
  return async (key) => {
    const id = keyOf(key);
    const hit = cache.get(id);
    if (listener.listening && hit && Date.now() - hit.at < ttlMs) return hit.value;
    const seen = generation;
    const found = await read(key);
    // A change noticed while we read may postdate what we read: do not keep it.
    if (found !== undefined && listener.listening && seen === generation) {
      if (cache.size >= max) cache.delete(cache.keys().next().value!);
      cache.set(id, { value: found, at: Date.now() });
    }
    return found;
  };
}

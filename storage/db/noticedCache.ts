import type { NotificationListener } from './notifications.ts';

/**
 * Reads kept in process while Postgres would say when they change: every change of what
 * they read notifies `channel` (a trigger), and the cache empties on each notice, so a
 * change applies at once in every process. Used only while the listener is listening (it
 * empties whenever that changes); misses are never kept; entries live at most `ttlMs` as
 * a backstop, `max` of them.
 */
export function noticedCache<V>(
  listener: NotificationListener, channel: string, read: (key: string) => Promise<V | undefined>, opts: { ttlMs?: number; max?: number } = {},
): (key: string) => Promise<V | undefined> {
  const ttlMs = opts.ttlMs ?? 60_000;
  const max = opts.max ?? 10_000;
  const cache = new Map<string, { value: V; at: number }>();
  let generation = 0;
  const invalidate = () => {
    generation += 1;
    cache.clear();
  };
  listener.on(channel, invalidate);
  listener.onState(invalidate);
  return async (key) => {
    const hit = cache.get(key);
    if (listener.listening && hit && Date.now() - hit.at < ttlMs) return hit.value;
    const seen = generation;
    const found = await read(key);
    // A change noticed while we read may postdate what we read: do not keep it.
    if (found !== undefined && listener.listening && seen === generation) {
      if (cache.size >= max) cache.delete(cache.keys().next().value!);
      cache.set(key, { value: found, at: Date.now() });
    }
    return found;
  };
}

import type { Db } from './knex.ts';
import type { NotificationListener } from './notifications.ts';
import { findKeyByHash, type KeyPrincipal } from './apiKeys.ts';
import { sha256Hex } from '../digest.ts';

export const AUTH_CHANNEL = 'silico_auth_changed';

export interface KeyResolver {
  resolve(secret: string): Promise<KeyPrincipal | undefined>;
}

/**
 * Resolves API keys with a small in-process cache of found keys. Every change to a key or
 * an account notifies AUTH_CHANNEL (a trigger, migration 002); the cache empties on each
 * notice, so a revocation applies at once in every api process. The cache is used only
 * while the listener is listening (it empties whenever that changes); misses are never
 * cached; entries live at most `ttlMs` as a backstop.
 */
export function createKeyResolver(db: Db, listener: NotificationListener, opts: { ttlMs?: number; max?: number } = {}): KeyResolver {
  const ttlMs = opts.ttlMs ?? 60_000;
  const max = opts.max ?? 10_000;
  const cache = new Map<string, { value: KeyPrincipal; at: number }>();
  let generation = 0;
  const invalidate = () => {
    generation += 1;
    cache.clear();
  };
  listener.on(AUTH_CHANNEL, invalidate);
  listener.onState(invalidate);

  return {
    async resolve(secret) {
      const hash = sha256Hex(secret);
      const hit = cache.get(hash);
      if (listener.listening && hit && Date.now() - hit.at < ttlMs) return hit.value;
      const seen = generation;
      const found = await findKeyByHash(db, hash);
      // A change noticed while we read may postdate what we read: do not keep it.
      if (found && listener.listening && seen === generation) {
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
        cache.set(hash, { value: found, at: Date.now() });
      }
      return found;
    },
  };
}

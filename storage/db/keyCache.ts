import type { Db } from './knex.ts';
import type { NotificationListener } from './notifications.ts';
import { findKeyByHash, type KeyPrincipal } from './apiKeys.ts';
import { sha256Hex } from '../digest.ts';
import { noticedCache } from './noticedCache.ts';

export const AUTH_CHANNEL = 'silico_auth_changed';

export interface KeyResolver {
  resolve(secret: string): Promise<KeyPrincipal | undefined>;
}

/**
 * Resolves API keys with a small in-process cache of found keys (noticedCache.ts): every
 * change to a key or an account notifies AUTH_CHANNEL (a trigger, migration 002), so a
 * revocation applies at once in every api process.
 */
export function createKeyResolver(db: Db, listener: NotificationListener, opts: { ttlMs?: number; max?: number } = {}): KeyResolver {
  const byHash = noticedCache(listener, AUTH_CHANNEL, (hash) => findKeyByHash(db, hash), opts);
  return { resolve: (secret) => byHash(sha256Hex(secret)) };
}

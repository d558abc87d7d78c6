import pg from 'pg';
import type { Db } from './knex.ts';
import { findKeyByHash, type KeyPrincipal } from './apiKeys.ts';
import { sha256Hex } from '../digest.ts';

export const AUTH_CHANNEL = 'silico_auth_changed';

export interface KeyResolver {
  resolve(secret: string): Promise<KeyPrincipal | undefined>;
  close(): Promise<void>;
}

/**
 * Resolves API keys with a small in-process cache of found keys. Every change to a key or
 * an account notifies AUTH_CHANNEL (a trigger, migration 002); the cache listens on its
 * own connection and empties on each notice, so a revocation applies at once in every
 * api process. The cache is used only while that connection is listening; misses are
 * never cached; entries live at most `ttlMs` as a backstop.
 */
export async function createKeyResolver(db: Db, databaseUrl: string, opts: { ttlMs?: number; max?: number } = {}): Promise<KeyResolver> {
  const ttlMs = opts.ttlMs ?? 60_000;
  const max = opts.max ?? 10_000;
  const cache = new Map<string, { value: KeyPrincipal; at: number }>();
  let generation = 0;
  let listening = false;
  let closed = false;
  let listener: pg.Client | undefined;

  const invalidate = () => {
    generation += 1;
    cache.clear();
  };
  const connect = async (): Promise<void> => {
    const client = new pg.Client({ connectionString: databaseUrl });
    client.on('notification', invalidate);
    client.on('error', () => undefined);
    client.on('end', () => {
      listening = false;
      invalidate();
      if (!closed) setTimeout(() => void connect().catch(() => undefined), 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${AUTH_CHANNEL}`);
    listener = client;
    invalidate();
    listening = true;
  };
  await connect().catch(() => undefined);

  return {
    async resolve(secret) {
      const hash = sha256Hex(secret);
      const hit = cache.get(hash);
      if (listening && hit && Date.now() - hit.at < ttlMs) return hit.value;
      const seen = generation;
      const found = await findKeyByHash(db, hash);
      // A change noticed while we read may postdate what we read: do not keep it.
      if (found && listening && seen === generation) {
        if (cache.size >= max) cache.delete(cache.keys().next().value!);
        cache.set(hash, { value: found, at: Date.now() });
      }
      return found;
    },
    async close() {
      closed = true;
      listening = false;
      await listener?.end().catch(() => undefined);
    },
  };
}

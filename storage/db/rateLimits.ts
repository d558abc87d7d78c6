import type { Db } from './knex.ts';

/**
 * Counters live in the `rate_limits` table that rate-limiter-flexible's Postgres store
 * uses, so every api process shares them. The daily counter of a key is
 * `daily:<key_id>:<YYYY-MM-DD>` (UTC day), which is how usage is read back.
 */
export const DAILY_PREFIX = 'daily';

export function utcDay(at: Date = new Date()): string {
  return at.toISOString().slice(0, 10);
}

/** The limiter key (without the `daily:` prefix the limiter adds). */
export function dailyCounterKey(keyId: string, day: string): string {
  return `${keyId}:${day}`;
}

/** Requests counted today for one key and for every key of its account. */
export async function requestsToday(db: Db, accountId: string, keyId: string, day: string): Promise<{ key: number; account: number }> {
  const rows: Array<{ id: string; points: number | null }> = await db('api_keys as k')
    .leftJoin('rate_limits as r', 'r.key', db.raw(`? || ':' || k.id || ':' || ?`, [DAILY_PREFIX, day]))
    .where('k.account_id', accountId)
    .select('k.id', 'r.points');
  let account = 0;
  let key = 0;
  for (const r of rows) {
    account += r.points ?? 0;
    if (r.id === keyId) key = r.points ?? 0;
  }
  return { key, account };
}

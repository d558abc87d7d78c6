import type { Db } from './knex.ts';
import type pg from 'pg';

/**
 * Fixed-window counters in the `rate_limits` table (unlogged: counts are worth nothing
 * after a crash), shared by every api process. A request draws from two counters at once
 * (its minute bucket and its key's daily count), so both are counted in ONE statement:
 * one round trip and one short row lock per counter on the request path. (We used
 * rate-limiter-flexible's Postgres store first; it counts one key per statement, which
 * doubled the statements on every request. Its window semantics are kept: a window
 * starts at its first request and restarts once expired.)
 *
 * The daily counter of a key is `daily:<key_id>:<YYYY-MM-DD>` (UTC day), which is how
 * GET /account reads usage back.
 */
export const DAILY_PREFIX = 'daily';

const DAY_MS = 86_400_000;
/** The UTC day last asked for, kept until it ends: every request asks, and toISOString is not free. */
let known = { day: '', from: 0, until: 0 };

/** When the UTC day of `at` began (ms since the epoch). */
function utcDayStart(at: number): number {
  return at - (((at % DAY_MS) + DAY_MS) % DAY_MS);
}

/** The UTC day (`YYYY-MM-DD`) of `at` (now by default). */
export function utcDay(at: number | Date = Date.now()): string {
  const t = typeof at === 'number' ? at : at.getTime();
  if (t < known.from || t >= known.until) {
    const from = utcDayStart(t);
    known = { day: new Date(from).toISOString().slice(0, 10), from, until: from + DAY_MS };
  }
  return known.day;
}

/** When the UTC day of `at` ends (ms since the epoch). */
export function utcDayEnd(at: number): number {
  return utcDayStart(at) + DAY_MS;
}

/** The daily counter's key for an API key on a UTC day. */
export function dailyCounterKey(keyId: string, day: string): string {
  return `${DAILY_PREFIX}:${keyId}:${day}`;
}

/** A key's requests on a UTC day, as its daily counter holds them. */
export async function dailyRequests(pool: pg.Pool, keyId: string, day: string): Promise<number> {
  const { rows } = await pool.query<{ points: number }>({
    name: 'silico-daily-requests',
    text: 'SELECT coalesce(max(points), 0)::int AS points FROM rate_limits WHERE key = $1',
    values: [dailyCounterKey(keyId, day)],
  });
  return rows[0]!.points;
}

/** Forgets counters whose window has passed; returns how many. */
export async function purgeRateLimits(db: Db): Promise<number> {
  return db('rate_limits').where('expire', '<', Date.now()).delete();
}


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

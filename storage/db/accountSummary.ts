import type { Db } from './knex.ts';
import { DAILY_PREFIX, dailyCounterKey } from './rateLimits.ts';

export interface AccountSummary {
  available_micros: number;
  reserved_micros: number;
  spent_micros: number;
  releases: number;
  requests_today_key: number;
  requests_today_account: number;
}

/**
 * What GET /account shows beyond the account row, read in one statement: compute
 * balances, owned releases, and today's request counts (this key, and every key of the
 * account) from the rate limiter's daily counters.
 */
export async function accountSummary(db: Db, accountId: string, keyId: string, day: string): Promise<AccountSummary> {
  const { rows } = await db.raw(`
    SELECT coalesce(b.available_micros, 0) AS available_micros,
           coalesce(b.reserved_micros, 0) AS reserved_micros,
           coalesce(b.spent_micros, 0) AS spent_micros,
           (SELECT count(*) FROM releases r WHERE r.account_id = a.id)::int AS releases,
           (SELECT coalesce(max(points), 0) FROM rate_limits WHERE key = :keyCounter)::int AS requests_today_key,
           (SELECT coalesce(sum(rl.points), 0) FROM api_keys k JOIN rate_limits rl ON rl.key = :prefix || ':' || k.id || ':' || :day
             WHERE k.account_id = a.id)::int AS requests_today_account
      FROM accounts a LEFT JOIN compute_balances b ON b.account_id = a.id
     WHERE a.id = :accountId`, { accountId, day, prefix: DAILY_PREFIX, keyCounter: `${DAILY_PREFIX}:${dailyCounterKey(keyId, day)}` });
  return rows[0] as AccountSummary;
}

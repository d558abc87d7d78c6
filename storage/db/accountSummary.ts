import type pg from 'pg';
import { DAILY_PREFIX } from './rateLimits.ts';
import { capColumns, capsOf, type SpendCaps } from './spendCaps.ts';

export interface AccountSummary {
  available_micros: number;
  reserved_micros: number;
  spent_micros: number;
  releases: number;
  /** What the account's ready deployments cost per hour, and what hosting has cost so far. */
  hosting_hourly_micros: number;
  hosting_spent_micros: number;
  /** Today's requests of the account's keys other than the caller's (its own count is the rate limiter's). */
  requests_today_other_keys: number;
  caps: SpendCaps;
}

/**
 * What GET /account shows beyond the account row, read in one prepared statement (it
 * runs on every call, so it is planned once per connection): compute balances, owned
 * releases, standing hosting cost, today's request counts of the account's other keys from
 * the daily rate-limit counters (not the caller's own: its row is the one every request of
 * the key updates, and the limiter already holds its count), and the account's and the key's spend caps with this month's spend.
 */
export async function accountSummary(pool: pg.Pool, accountId: string, keyId: string, day: string): Promise<AccountSummary> {
  const { rows } = await pool.query<Omit<AccountSummary, 'caps'> & Parameters<typeof capsOf>[0]>({
    name: 'silico-account-summary',
    text: `
      SELECT coalesce(b.available_micros, 0)::float8 AS available_micros,
             coalesce(b.reserved_micros, 0)::float8 AS reserved_micros,
             coalesce(b.spent_micros, 0)::float8 AS spent_micros,
             (SELECT count(*) FROM releases r WHERE r.account_id = a.id)::int AS releases,
             (SELECT coalesce(sum(h.min_instances * p.price_per_second_micros * 3600), 0) FROM hostings h
                JOIN compute_profiles p ON p.id = h.compute_profile WHERE h.account_id = a.id AND h.status = 'ready')::float8 AS hosting_hourly_micros,
             (SELECT coalesce(sum(e.amount_micros), 0) FROM ledger_txns t JOIN ledger_entries e ON e.txn_id = t.id
               WHERE t.account_id = a.id AND t.kind = 'hosting' AND e.book = 'spent')::float8 AS hosting_spent_micros,
             (SELECT coalesce(sum(rl.points), 0) FROM api_keys k
                JOIN rate_limits rl ON rl.key = $2 || ':' || k.id || ':' || $3
               WHERE k.account_id = a.id AND k.id <> $4)::int AS requests_today_other_keys,
             ${capColumns('always')}
        FROM accounts a LEFT JOIN compute_balances b ON b.account_id = a.id JOIN api_keys k ON k.id = $4
       WHERE a.id = $1`,
    values: [accountId, DAILY_PREFIX, day, keyId],
  });
  const row = rows[0]!;
  return { ...row, caps: capsOf(row) };
}

import type { Db } from './knex.ts';

/**
 * One holder's caps (null: none) and what it has spent this calendar month (UTC); null
 * where that was not asked for (planning reads it only under a monthly cap).
 */
export interface Cap { monthly_micros: number | null; run_micros: number | null; month_spent_micros: number | null }
export interface SpendCaps { account: Cap; key: Cap }

/** The caps an account and a key are set to, without what they spent (capColumns' first four). */
export interface CapSettings { a_monthly: number | null; a_run: number | null; k_monthly: number | null; k_run: number | null }
/** capColumns' settings alone: no sums, so they may be kept with the key they were read with. */
export const CAP_SETTING_COLUMNS = 'a.monthly_cap_micros::float8 AS a_monthly, a.run_cap_micros::float8 AS a_run, k.monthly_cap_micros::float8 AS k_monthly, k.run_cap_micros::float8 AS k_run';

/**
 * The columns (`a` the account row, `k` the key row) that capsOf reads, for a statement
 * that selects more. What each has spent this month is `silico_month_spent` (migration
 * 030): runs and invocations at their charge once settled, their reservation until then,
 * and for the account its deployments' standing cost. It sums the month's records, so
 * `spent: 'capped'` reads it only for a holder with a monthly cap (every plan reads caps;
 * most holders have none).
 */
export function capColumns(spent: 'always' | 'capped'): string {
  const month = (holder: 'a' | 'k', call: string) => (spent === 'always' ? call : `CASE WHEN ${holder}.monthly_cap_micros IS NOT NULL THEN ${call} END`);
  return `${CAP_SETTING_COLUMNS},
  (${month('a', 'silico_month_spent(a.id, NULL)')})::float8 AS a_spent, (${month('k', 'silico_month_spent(a.id, k.id)')})::float8 AS k_spent`;
}

export function capsOf(r: { a_monthly: number | null; a_run: number | null; k_monthly: number | null; k_run: number | null; a_spent: number | null; k_spent: number | null }): SpendCaps {
  return {
    account: { monthly_micros: r.a_monthly ?? null, run_micros: r.a_run ?? null, month_spent_micros: r.a_spent ?? null },
    key: { monthly_micros: r.k_monthly ?? null, run_micros: r.k_run ?? null, month_spent_micros: r.k_spent ?? null },
  };
}

/**
 * An account's and a key's caps; what each spent this month `always`, or (plans, by
 * default) only where a monthly cap needs it. With `known` settings (read with the key,
 * kept until the account or key changes) and no monthly cap among them, nothing is read.
 */
export async function spendCaps(
  db: Db, of: { accountId: string; keyId: string }, opts: { spent?: 'always' | 'capped'; known?: CapSettings } = {},
): Promise<SpendCaps> {
  const { accountId, keyId } = of;
  const { spent = 'capped', known } = opts;
  if (spent === 'capped' && known && known.a_monthly === null && known.k_monthly === null) return capsOf({ ...known, a_spent: null, k_spent: null });
  const { rows } = await db.raw(`SELECT ${capColumns(spent)} FROM accounts a JOIN api_keys k ON k.id = ? AND k.account_id = a.id WHERE a.id = ?`, [keyId, accountId]);
  return capsOf(rows[0] ?? { a_monthly: null, a_run: null, k_monthly: null, k_run: null, a_spent: null, k_spent: null });
}

export interface CapLimit { micros: number; cap: string }

/** The tightest of the per-run caps, and the least left under the monthly caps; null where no cap applies. */
export function capLimits(caps: SpendCaps): { perRun: CapLimit | null; monthly: CapLimit | null } {
  const tightest = (limits: CapLimit[]) => (limits.length ? limits.reduce((a, b) => (b.micros < a.micros ? b : a)) : null);
  const holders = ['account', 'key'] as const;
  return {
    perRun: tightest(holders.filter((h) => caps[h].run_micros !== null).map((h) => ({ micros: caps[h].run_micros!, cap: `the ${h}'s per-run cap` }))),
    monthly: tightest(holders.filter((h) => caps[h].monthly_micros !== null)
      .map((h) => ({ micros: Math.max(0, caps[h].monthly_micros! - (caps[h].month_spent_micros ?? 0)), cap: `what is left of the ${h}'s monthly cap` }))),
  };
}

/** The most one more run may cost under every cap, and which cap sets it; null when no cap applies. */
export function runSpendLimit(caps: SpendCaps): CapLimit | null {
  const { perRun, monthly } = capLimits(caps);
  if (!perRun || !monthly) return perRun ?? monthly;
  return monthly.micros < perRun.micros ? monthly : perRun;
}

/** Sets (a number) or clears (null) an account's or a key's caps; an absent field is left as it is. */
export async function setSpendCaps(db: Db, target: { accountId: string } | { keyId: string }, caps: { monthly_micros?: number | null; run_micros?: number | null }): Promise<void> {
  const change: Record<string, number | null> = {};
  if (caps.monthly_micros !== undefined) change.monthly_cap_micros = caps.monthly_micros;
  if (caps.run_micros !== undefined) change.run_cap_micros = caps.run_micros;
  if (!Object.keys(change).length) return;
  if ('accountId' in target) await db('accounts').where({ id: target.accountId }).update(change);
  else await db('api_keys').where({ id: target.keyId }).update(change);
}

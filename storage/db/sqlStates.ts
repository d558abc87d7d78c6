/**
 * SQLSTATEs our database functions raise (migrations 016, 028, 030) for outcomes a caller answers
 * as API errors rather than as failures. Class `SL` is ours: no standard class uses it.
 */
export const SQLSTATE = {
  /** The plan was already used (409 plan_unavailable). */
  planUsed: 'SL409',
  /** Available compute cannot cover the reservation (402 insufficient_credits). */
  insufficientCompute: 'SL402',
  /** The run named for reuse is no longer a completed run of the account (409 plan_unavailable). */
  reuseSourceGone: 'SL410',
  /** A spend cap does not allow the reservation (migration 030; 409 plan_unavailable, or 422 spend_cap_reached without a plan). */
  spendCap: 'SLCAP',
} as const;

/** True when `err` is a Postgres error raised with `code`. */
export function isSqlState(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

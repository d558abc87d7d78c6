import type { Deps, Caller } from './tools/tool.ts';
import { ApiError, errors } from './errors.ts';
import { planUnavailable } from './plans.ts';
import type { ComputeProfileRow } from '../storage/db/computeProfiles.ts';
import type { Finding } from '../storage/db/plans.ts';
import { capLimits, runSpendLimit, spendCaps, type Cap, type CapLimit } from '../storage/db/spendCaps.ts';
import { isSqlState, SQLSTATE } from '../storage/db/sqlStates.ts';
import { microsToUsd } from '../storage/ledger.ts';

/** One holder's caps as `GET /account` and the operator's CLI show them (USD; null: no cap, or not read). */
export function capView(c: Cap) {
  const inUsd = (m: number | null) => (m === null ? null : microsToUsd(m));
  return { monthly_usd: inUsd(c.monthly_micros), per_run_usd: inUsd(c.run_micros), month_spent_usd: inUsd(c.month_spent_micros) };
}

const usd = (m: number) => `$${(m / 1e6).toFixed(6)}`;
const sentence = (s: string) => `${s[0]!.toUpperCase()}${s.slice(1)}`;

/** The caller's caps: with the settings read with its key (`known`), or read afresh. */
const callerCaps = (deps: Deps, caller: Caller, known: boolean) => spendCaps(deps.db, { accountId: caller.account.id, keyId: caller.key.id }, known ? { known: caller.caps } : {});

function reached(limit: CapLimit, profile: ComputeProfileRow, path: string | null): Finding {
  return { severity: 'blocking', code: 'spend_cap_reached', message: `${sentence(limit.cap)} leaves ${usd(limit.micros)}, less than one second of ${profile.id}: nothing more can start until the cap is raised or the month turns.`, path };
}

/**
 * A lone run's caps, before anything is reserved: when the account's or the key's caps
 * leave less than a second of the profile's compute, it is refused (`spend_cap_reached`);
 * when they leave less than its maximum price, it runs under that cap: its reservation is
 * the cap, and its execution stops once it has cost that much. Returns the cap it runs
 * under, if any.
 */
export async function runCapFindings(deps: Deps, caller: Caller, maxMicros: number, profile: ComputeProfileRow): Promise<{ findings: Finding[]; capMicros?: number }> {
  const limit = runSpendLimit(await callerCaps(deps, caller, true));
  if (!limit || limit.micros >= maxMicros) return { findings: [] };
  if (limit.micros < profile.price_per_second_micros) return { findings: [reached(limit, profile, null)] };
  const seconds = Math.floor(limit.micros / profile.price_per_second_micros);
  return {
    capMicros: limit.micros,
    findings: [{ severity: 'warning', code: 'spend_cap_applies', message: `This run may cost at most ${usd(limit.micros)} (${limit.cap}): about ${seconds} s of ${profile.id}. If it gets there it is stopped and ends cancelled with spend_cap_reached, charged up to the cap.`, path: 'max_runtime_seconds' }],
  };
}

/**
 * A hosted invocation's caps: like a run's, except that an invocation is bounded by its
 * time rather than metered against its cost, so under a cap its `max_seconds` is what the
 * cap pays for (and its reservation that price); one stopped there ends cancelled with
 * `spend_cap_reached`, as a run does.
 */
export async function invocationCapFindings(deps: Deps, caller: Caller, maxSeconds: number, profile: ComputeProfileRow): Promise<{ findings: Finding[]; maxSeconds: number; capMicros?: number }> {
  const price = Number(profile.price_per_second_micros);
  const limit = runSpendLimit(await callerCaps(deps, caller, true));
  if (!limit || limit.micros >= maxSeconds * price) return { findings: [], maxSeconds };
  if (limit.micros < price) return { findings: [reached(limit, profile, null)], maxSeconds };
  const seconds = Math.floor(limit.micros / price);
  return {
    maxSeconds: seconds, capMicros: limit.micros,
    findings: [{ severity: 'warning', code: 'spend_cap_applies', message: `This invocation may cost at most ${usd(seconds * price)} (${limit.cap}), so it may run ${seconds} s instead of ${maxSeconds} s; stopped there it ends cancelled with spend_cap_reached.`, path: null }],
  };
}

/**
 * A study's caps, over the whole study: every run's maximum within the per-run caps, and
 * the sum of them within what is left of the monthly caps; otherwise the plan is refused
 * (`spend_cap_reached`) with what would fit. A study is priced and reserved whole, so its
 * runs are never cut short by a cap.
 */
export async function studyCapFindings(
  deps: Deps, caller: Caller, arms: Array<{ max_runtime_seconds: number; replicates: number; estimated_max_micros: number }>, totalMicros: number,
): Promise<Finding[]> {
  const { perRun, monthly } = capLimits(await callerCaps(deps, caller, false));
  const findings: Finding[] = [];
  if (perRun) {
    arms.forEach((a, i) => {
      if (a.estimated_max_micros <= perRun.micros) return;
      const price = a.estimated_max_micros / a.max_runtime_seconds;
      findings.push({
        severity: 'blocking', code: 'spend_cap_reached', path: `arms[${i}].max_runtime_seconds`,
        message: `Each run of this arm may cost up to ${usd(a.estimated_max_micros)}, over ${perRun.cap} of ${usd(perRun.micros)}: a max_runtime_seconds of at most ${Math.floor(perRun.micros / price)} fits it.`,
      });
    });
  }
  if (monthly && totalMicros > monthly.micros) {
    findings.push({
      severity: 'blocking', code: 'spend_cap_reached', path: null,
      message: `This study may cost up to ${usd(totalMicros)}, over ${monthly.cap} (${usd(monthly.micros)}): fewer arms or replicates, or shorter runs, fit it.`,
    });
  }
  return findings;
}

/**
 * The database's own check (migration 030) refused an acceptance: another acceptance of
 * the account got there first, or a cap changed after the plan was checked. With a plan
 * the plan can no longer be made (409); a direct run is refused as its plan would be (422).
 */
export function spendCapRefusal(err: unknown, planned: boolean): ApiError | null {
  if (!isSqlState(err, SQLSTATE.spendCap)) return null;
  const why = `A spend cap does not allow this now: ${(err as Error).message}.`;
  return planned ? planUnavailable(`${why} Prepare it again.`, null) : errors.validation('spend_cap_reached', why, null);
}

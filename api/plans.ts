import type { Db } from '../storage/db/knex.ts';
import { digestInput, getPlan, type PlanRow } from '../storage/db/plans.ts';
import { ApiError, errors } from './errors.ts';
import { isoTime } from '../storage/ids.ts';

/** docs/contract/gaps.md: plans expire after one hour. */
export const PLAN_TTL_SECONDS = 3600;

/** What every prepare route returns about its plan. */
export function planView(p: PlanRow) {
  return {
    plan_id: p.id,
    plan_sha256: p.plan_sha256,
    expires_at: isoTime(p.expires_at),
    status: p.status,
    findings: p.findings,
    digest_input: digestInput(p),
  };
}

/**
 * The checks every execute route makes, in this order: the plan exists for this caller
 * and kind (404 plan_not_found), the digest is the one approved (409
 * plan_digest_mismatch), it was not used (409 plan_unavailable, naming its result), it has
 * not expired (409 plan_expired), and it is not blocked (409 plan_blocked).
 */
export async function approvedPlan(db: Db, accountId: string, kind: string, planId: string, planSha256: string, opts: PlanUse = {}): Promise<PlanRow> {
  return usablePlan(db, accountId, kind, planId, planSha256, opts);
}

export interface PlanUse {
  /**
   * A consumed plan is passed on instead of refused here: its execution's record step
   * refuses it as used, after completing what an earlier attempt of it recorded but never
   * started (acceptAndStart's `earlier`).
   */
  resumable?: boolean;
}

/**
 * The same checks without the digest: for an execution approved by a standing grant
 * instead (publication's workflow grant), which the caller checks against the plan.
 */
export async function grantablePlan(db: Db, accountId: string, kind: string, planId: string): Promise<PlanRow> {
  return usablePlan(db, accountId, kind, planId, undefined);
}

async function usablePlan(db: Db, accountId: string, kind: string, planId: string, planSha256: string | undefined, opts: PlanUse = {}): Promise<PlanRow> {
  const plan = await getPlan(db, planId, accountId);
  if (!plan || plan.kind !== kind) throw errors.notFound('plan_not_found', 'plan', 'plan_id');
  if (planSha256 !== undefined && plan.plan_sha256 !== planSha256) {
    throw new ApiError(409, 'plan_digest_mismatch', 'plan_sha256 is not the digest of this plan; prepare again or send the exact digest it returned.', 'plan_sha256');
  }
  if (plan.consumed_at) {
    if (opts.resumable) return plan;
    throw planUsed(plan.result_ref);
  }
  if (new Date(plan.expires_at).getTime() <= Date.now()) {
    throw new ApiError(409, 'plan_expired', `This plan expired at ${isoTime(plan.expires_at)}; prepare it again.`, 'plan_id');
  }
  if (plan.status === 'blocked') {
    throw new ApiError(409, 'plan_blocked', 'This plan has blocking findings and cannot be executed.', 'plan_id', { findings: plan.findings.filter((f) => f.severity === 'blocking') });
  }
  return plan;
}

/** 409 plan_unavailable for a plan another request used first, naming what it made. */
export function planUsed(resultRef: string | null): ApiError {
  return planUnavailable('This plan was already used; one approval authorizes one result.', resultRef);
}

/**
 * 409 plan_unavailable: the plan cannot make its result. `details.result_ref` is always
 * there: the result it made when it was used, null when what it was prepared on moved.
 */
export function planUnavailable(message: string, resultRef: string | null, details: Record<string, unknown> = {}): ApiError {
  return new ApiError(409, 'plan_unavailable', message, 'plan_id', { result_ref: resultRef, ...details });
}

/** The result a plan made, read after losing a race to use it. */
export async function resultOf(db: Db, accountId: string, planId: string): Promise<string | null> {
  return (await getPlan(db, planId, accountId))?.result_ref ?? null;
}

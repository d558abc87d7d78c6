import type { Deps, Caller } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { acceptAndStart, startAccepted } from '../acceptAndStart.ts';
import { planUsed, resultOf } from '../plans.ts';
import { getRun, insertAcceptedRun, insertReusedRun, unacceptRun, type NewRun, type RunRow } from '../../storage/db/runs.ts';
import { planUnavailable } from '../plans.ts';
import { isSqlState, SQLSTATE } from '../../storage/db/sqlStates.ts';
import { spendCapRefusal } from '../spendCaps.ts';
import { keyedUuid, newUuid } from '../../storage/ids.ts';
import { RUN_TASK_QUEUE, runWorkflowId } from '../../kernel/workflowNames.ts';
import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { fairShare } from '../../kernel/fairShares.ts';
import type { RunProposal } from './prepare.ts';
import { runWorkflow } from '../../workflows/run.ts';
import type { RunWorkflowInput } from '../../kernel/runSchedule.ts';
import type { ComputeProfileRow } from '../../storage/db/computeProfiles.ts';

/**
 * How a run's workflow starts: its id, queue and search attributes, from the run; with its
 * compute profile (a run just accepted), its schedule too, and whether it took its slot.
 */
function runStart(baseUrl: string, run: Pick<RunRow, 'id' | 'account_id' | 'kind' | 'resolved_ref' | 'status' | 'max_runtime_seconds' | 'compute_profile' | 'reserved_micros'>, profile?: Pick<ComputeProfileRow, 'id' | 'schedule_to_start_seconds'>) {
  const input: RunWorkflowInput = profile
    ? { runId: run.id, schedule: { profile: profile.id, maxRuntimeSeconds: run.max_runtime_seconds, scheduleToStartSeconds: profile.schedule_to_start_seconds }, running: run.status === 'running' }
    : { runId: run.id };
  return {
    taskQueue: RUN_TASK_QUEUE,
    workflowId: runWorkflowId(run.id),
    args: [input] as [RunWorkflowInput],
    priority: fairShare(run.account_id),
    ...workflowMetadata(baseUrl, {
      attributes: { account: run.account_id, kind: run.kind, ref: run.resolved_ref },
      summary: `run of ${run.resolved_ref} on ${run.compute_profile} for ${run.account_id}, $${microsToUsd(run.reserved_micros)} reserved`,
      facts: [`Run ${run.id} of account ${run.account_id}.`],
      resource: `/runs/${run.id}`, page: `runs/${run.id}`,
    }),
  };
}

/** The id of the run a POST /runs makes: from its Idempotency-Key when it has one (always, over REST and MCP). */
export function runIdFor(accountId: string, idempotencyKey: string | undefined): string {
  return idempotencyKey ? keyedUuid(accountId, 'run_create', idempotencyKey) : newUuid();
}

/**
 * The run an earlier attempt of this same request recorded (its answer lost: a replica
 * killed mid-request, the key's lock lapsed, the client retried), its workflow started if
 * that attempt died before starting it; undefined when there is none. A key seen again
 * after its idempotency record expired is a new request with an old key: refused.
 */
export async function earlierRun(deps: Deps, accountId: string, runId: string): Promise<RunRow | undefined> {
  const run = await getRun(deps.db, runId, accountId);
  if (!run) return undefined;
  if (Date.now() - new Date(run.created_at).getTime() > deps.config.limits.idempotencyTtlSeconds * 1000) {
    throw errors.conflict('idempotency_conflict', 'This Idempotency-Key was used for an earlier run; use a new key for a new request.');
  }
  // A run whose execution has not begun may lack its workflow (one that took its slot at
  // acceptance is running already); a reused one never has one.
  if ((run.status === 'queued' || (run.status === 'running' && !run.started_at)) && !run.reused_from) await startAccepted(deps.temporal, runWorkflow, runStart(deps.config.baseUrl, run));
  return run;
}

/**
 * Accepts an approved run: in one transaction the plan is consumed (if any), the
 * proposal's maximum price is reserved (or 402 and nothing happens), the run is recorded
 * with its first event, and an account concurrency slot is taken when one is free (the
 * run is then running); then its workflow `run-<id>` starts with the run's schedule
 * (when it cannot, the acceptance is undone). The workflow id is the natural dedupe of everything
 * after the claim; `runId` (runIdFor) makes a retry of the request find this run.
 */
export async function acceptRun(deps: Deps, caller: Caller, proposal: RunProposal, opts: { runId: string; profile: ComputeProfileRow; planId?: string; metadata?: Record<string, string> }): Promise<RunRow> {
  const runId = opts.runId;
  const record: NewRun = {
    id: runId, account_id: caller.account.id, kind: proposal.kind, ref: proposal.ref, resolved_ref: proposal.resolved_ref,
    release_id: proposal.release_id, workspace_id: proposal.workspace_id ?? null, revision_id: proposal.revision_id ?? null, package_sha256: proposal.package_sha256, inputs: proposal.inputs, metadata: opts.metadata ?? {},
    compute_profile: proposal.compute_profile, max_runtime_seconds: proposal.max_runtime_seconds,
    reserved_micros: proposal.estimated_max_micros, seed: proposal.seed, experiment_id: null, plan_id: opts.planId ?? null,
    inputs_sha256: proposal.inputs_sha256, runtime_sha256: proposal.runtime_sha256,
    key_id: caller.key.id, cap_micros: proposal.cap_micros ?? null,
  };
  const refusal = async (err: unknown) => {
    if (isSqlState(err, SQLSTATE.planUsed)) return planUsed(opts.planId ? await resultOf(deps.db, caller.account.id, opts.planId) : null);
    if (isSqlState(err, SQLSTATE.reuseSourceGone)) return planUnavailable(`Run ${proposal.reuse_of} can no longer be reused; prepare the run again.`, null);
    const capped = spendCapRefusal(err, opts.planId !== undefined);
    if (capped) return capped;
    if (isSqlState(err, SQLSTATE.insufficientCompute)) {
      return errors.insufficientCredits({ what: 'this run', usd: proposal.estimated_max_micros / 1e6, resolution: 'Add compute to the account or lower max_runtime_seconds.' });
    }
    return null;
  };
  // A reused run is answered whole in its own transaction: no workflow, no compute.
  if (proposal.reuse_of) {
    try {
      return await insertReusedRun(deps.db, record, { id: proposal.reuse_of, accountIds: proposal.reuse_accounts ?? [caller.account.id] });
    } catch (err) {
      throw (await refusal(err)) ?? err;
    }
  }
  return acceptAndStart(deps.temporal, {
    record: () => insertAcceptedRun(deps.db, record, { slots: deps.config.limits.concurrentRunsPerAccount }),
    refusal,
    workflow: runWorkflow,
    start: (recorded) => runStart(deps.config.baseUrl, recorded, opts.profile),
    undo: () => unacceptRun(deps.db, runId),
  });
}

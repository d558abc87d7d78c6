import type { Deps, Caller } from '../tools/tool.ts';
import { ApiError } from '../errors.ts';
import { planUsed, resultOf } from '../plans.ts';
import { insertAcceptedRun, insertReusedRun, unacceptRun, type NewRun, type RunRow } from '../../storage/db/runs.ts';
import { planUnavailable } from '../plans.ts';
import { isSqlState, SQLSTATE } from '../../storage/db/sqlStates.ts';
import { spendCapRefusal } from '../spendCaps.ts';
import { newUuid } from '../../storage/ids.ts';
import { CONTROL_TASK_QUEUE, runWorkflowId } from '../../workflows/constants.ts';
import { workflowSearchAttributes } from '../../workflows/searchAttributes.ts';
import type { RunProposal } from './prepare.ts';

/**
 * Accepts an approved run: in one transaction the plan is consumed (if any), the
 * proposal's maximum price is reserved (or 402 and nothing happens), and the run is
 * recorded as queued with its first event; then its workflow `run-<id>` starts (when it
 * cannot, the acceptance is undone). The workflow id is the natural dedupe of everything
 * after the claim.
 */
export async function acceptRun(deps: Deps, caller: Caller, proposal: RunProposal, opts: { planId?: string; metadata?: Record<string, string> }): Promise<RunRow> {
  const runId = newUuid();
  const record: NewRun = {
    id: runId, account_id: caller.account.id, kind: proposal.kind, ref: proposal.ref, resolved_ref: proposal.resolved_ref,
    release_id: proposal.release_id, workspace_id: proposal.workspace_id ?? null, revision_id: proposal.revision_id ?? null, package_sha256: proposal.package_sha256, inputs: proposal.inputs, metadata: opts.metadata ?? {},
    compute_profile: proposal.compute_profile, max_runtime_seconds: proposal.max_runtime_seconds,
    reserved_micros: proposal.estimated_max_micros, seed: proposal.seed, experiment_id: null, plan_id: opts.planId ?? null,
    inputs_sha256: proposal.inputs_sha256, runtime_sha256: proposal.runtime_sha256,
    key_id: caller.key.id, cap_micros: proposal.cap_micros ?? null,
  };
  let run: RunRow;
  try {
    // A reused run is answered whole in this transaction: no workflow, no compute.
    if (proposal.reuse_of) return await insertReusedRun(deps.db, record, { id: proposal.reuse_of, accountIds: proposal.reuse_accounts ?? [caller.account.id] });
    run = await insertAcceptedRun(deps.db, record);
  } catch (err) {
    if (isSqlState(err, SQLSTATE.planUsed)) throw planUsed(opts.planId ? await resultOf(deps.db, caller.account.id, opts.planId) : null);
    if (isSqlState(err, SQLSTATE.reuseSourceGone)) throw planUnavailable(`Run ${proposal.reuse_of} can no longer be reused; prepare the run again.`, null);
    const capped = spendCapRefusal(err, opts.planId !== undefined);
    if (capped) throw capped;
    if (isSqlState(err, SQLSTATE.insufficientCompute)) {
      throw new ApiError(402, 'insufficient_credits', `Available compute cannot cover this run's maximum of $${proposal.estimated_max_micros / 1e6}.`, null, {
        required_usd: proposal.estimated_max_micros / 1e6, resolution: 'Add compute to the account or lower max_runtime_seconds.', retryable: false,
      });
    }
    throw err;
  }
  try {
    await deps.temporal.startWorkflow('runWorkflow', {
      taskQueue: CONTROL_TASK_QUEUE,
      workflowId: runWorkflowId(runId),
      args: [{ runId }],
      typedSearchAttributes: workflowSearchAttributes({ account: caller.account.id, kind: proposal.kind, ref: proposal.resolved_ref }),
    });
  } catch (err) {
    // Temporal could not take the run: its acceptance is undone (plan unused, reservation
    // released, no row), the answer is 503, and a retry with the same Idempotency-Key
    // completes it. Should the undo itself fail, the run stays queued with no workflow and
    // the hourly reconciliation ends it, charging nothing.
    await unacceptRun(deps.db, runId).catch(() => undefined);
    throw err;
  }
  return run;
}

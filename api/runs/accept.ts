import type { Deps, Caller } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { acceptAndStart } from '../acceptAndStart.ts';
import { planUsed, resultOf } from '../plans.ts';
import { insertAcceptedRun, insertReusedRun, unacceptRun, type NewRun, type RunRow } from '../../storage/db/runs.ts';
import { planUnavailable } from '../plans.ts';
import { isSqlState, SQLSTATE } from '../../storage/db/sqlStates.ts';
import { spendCapRefusal } from '../spendCaps.ts';
import { newUuid } from '../../storage/ids.ts';
import { CONTROL_TASK_QUEUE, runWorkflowId } from '../../kernel/workflowNames.ts';
import { workflowSearchAttributes } from '../../kernel/searchAttributes.ts';
import type { RunProposal } from './prepare.ts';
import { runWorkflow } from '../../workflows/run.ts';

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
    record: () => insertAcceptedRun(deps.db, record),
    refusal,
    workflow: runWorkflow,
    start: () => ({
      taskQueue: CONTROL_TASK_QUEUE,
      workflowId: runWorkflowId(runId),
      args: [{ runId }],
      typedSearchAttributes: workflowSearchAttributes({ account: caller.account.id, kind: proposal.kind, ref: proposal.resolved_ref }),
    }),
    undo: () => unacceptRun(deps.db, runId),
  });
}

import type { Deps, Caller } from '../tools/tool.ts';
import { ApiError, errors } from '../errors.ts';
import { acceptAndStart, acceptOnly } from '../acceptAndStart.ts';
import { planUnavailable, planUsed, resultOf } from '../plans.ts';
import { deploymentFinding, prepareInvocation, type InvocationProposal } from './prepare.ts';
import { acceptInvocation, announceInvocation, getInvocation, InvocationNotCovered, InvocationPlanUsed, markWorkflowStarted, unacceptInvocation, type InvocationRow } from '../../storage/db/hostedInvocations.ts';
import type { PlanRow } from '../../storage/db/plans.ts';
import type { HostingRow } from '../../storage/db/hosting.ts';
import type { InvocationArgs } from '../../workflows/invocation.ts';
import { digestJson } from '../../storage/digest.ts';
import { spendCapRefusal } from '../spendCaps.ts';
import { newId } from '../../storage/ids.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { invocationMetadata } from './metadata.ts';
import { CONTROL_TASK_QUEUE, invocationWorkflowId } from '../../kernel/workflowNames.ts';
import { invocationWorkflow } from '../../workflows/invocation.ts';

const unavailable = (message: string) => new ApiError(409, 'deployment_unavailable', message, 'plan_id');

/**
 * Execution rechecks what the plan bound: the same deployment (lab and generation) of the
 * same release, still visible to the caller and still ready (paused is 409
 * `deployment_paused`, anything else 409 `deployment_unavailable`), and the inputs still
 * valid for its contract; any other change is 409 `plan_unavailable`.
 */
async function recheckInvocation(deps: Deps, caller: Caller, p: InvocationProposal): Promise<HostingRow> {
  let again: Awaited<ReturnType<typeof prepareInvocation>>;
  try {
    again = await prepareInvocation(deps, caller, { reference: p.reference, sha256: p.package_sha256, inputs: p.inputs, seed: p.seed });
  } catch (err) {
    // The lab now hosts another release, or the caller no longer sees it.
    if (err instanceof ApiError && err.status === 404) throw unavailable(`${p.reference} is no longer hosted for you; prepare again against a hosted release.`);
    throw err;
  }
  if (again.hosting.lab_id !== p.lab_id || again.hosting.generation !== p.hosting_generation) {
    throw unavailable(`The deployment this plan was prepared for has been replaced; prepare the invocation again.`);
  }
  const refused = deploymentFinding(again.hosting);
  if (refused) throw new ApiError(409, refused.code, refused.message, 'plan_id');
  if (digestJson(again.proposal) !== digestJson(p) || again.findings.some((f) => f.severity === 'blocking')) {
    throw planUnavailable('The release contract or its price changed since this plan was prepared; prepare it again.', null);
  }
  return again.hosting;
}

/**
 * Accepts an approved invocation plan, only from the OAuth client and account that
 * prepared it (rule 12; another account's plan is already not found): rechecks it, then
 * in one transaction consumes the plan, reserves its maximum price under
 * `invocation:<id>` (402 and nothing happens when the balance cannot cover it) and records
 * it queued. It is recorded as `id` (so its ending may be waited for from before it
 * exists); a retry whose earlier attempt recorded it and never began it answers that one.
 *
 * A deployment served somewhere: the serving worker is told (announced) and carries the
 * invocation from lease to settled ending with no workflow, so no Temporal work stands
 * between the request and its answer; the workers' recovery starts `invocation-<id>` for
 * one it does not carry (deploy/invocationRecovery.ts). A deployment served nowhere yet:
 * `invocation-<id>` starts now and waits for it; when Temporal cannot take it the
 * acceptance is undone (plan unused, nothing reserved, no row) and the answer is 503.
 */
export async function acceptHostedInvocation(deps: Deps, caller: Caller, plan: PlanRow, id: string = newId('inv')): Promise<InvocationRow> {
  const p = plan.proposal as InvocationProposal;
  if (p.client_id !== caller.key.client_id) {
    throw new ApiError(403, 'client_mismatch', 'This invocation plan was prepared by another client; only the client that prepared it may execute it.', 'plan_id', {
      resolution: 'Prepare the invocation with this key, or execute it with the key that prepared it.', retryable: false,
    });
  }
  const hosting = await recheckInvocation(deps, caller, p);
  const { estimated_max_micros: reserved, ...bound } = p;
  const served = hosting.serving_queue;
  const acceptance = {
    record: () => acceptInvocation(deps.db, { ...bound, id, account_id: caller.account.id, key_id: caller.key.id, reserved_micros: reserved, plan_id: plan.id }, served),
    refusal: async (err: unknown) => {
      if (err instanceof InvocationPlanUsed) return planUsed(await resultOf(deps.db, caller.account.id, plan.id));
      const capped = spendCapRefusal(err, true);
      if (capped) return capped;
      if (err instanceof InvocationNotCovered) {
        return errors.insufficientCredits({ what: 'this invocation', usd: microsToUsd(p.estimated_max_micros), resolution: 'Add compute to the account, then prepare again.' });
      }
      return null;
    },
    // Recorded by an earlier attempt of this plan and still queued: it may never have begun.
    earlier: async () => {
      const ref = /^invocation:(.+)$/.exec((await resultOf(deps.db, caller.account.id, plan.id)) ?? '');
      const row = ref ? await getInvocation(deps.db, ref[1]!, caller.account.id) : undefined;
      return row?.status === 'queued' ? row : null;
    },
  };
  if (served) {
    // Announced as it is recorded; an earlier attempt's, again. Missed, the recovery
    // starts its workflow, which sends it to the serving worker.
    return acceptOnly({
      ...acceptance,
      earlier: async () => {
        const row = await acceptance.earlier();
        if (row) await announceInvocation(deps.db, served, row.id).catch(() => undefined);
        return row;
      },
    });
  }
  const accepted = await acceptAndStart(deps.temporal, {
    ...acceptance,
    workflow: invocationWorkflow,
    start: (row) => ({
      taskQueue: CONTROL_TASK_QUEUE,
      workflowId: invocationWorkflowId(row.id),
      args: [{ invocationId: row.id, schedule: { labId: row.lab_id, generation: row.hosting_generation, maxSeconds: row.max_seconds } } satisfies InvocationArgs],
      ...invocationMetadata(deps.config.baseUrl, row),
    }),
    undo: () => unacceptInvocation(deps.db, id),
  });
  // Missed (this replica gone first), the recovery finds it without one and starts it again: a no-op.
  await markWorkflowStarted(deps.db, accepted.id).catch(() => undefined);
  return accepted;
}

import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import type { ToolDef, ToolContext } from '../tools/tool.ts';
import { str, obj, digestInput, planExecute, id } from '../schemas/common.ts';
import { hostedRelease, hostingPlan, hostingRecord } from './schemas.ts';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { ApiError, errors } from '../errors.ts';
import { approvedPlan, planUsed, planView, resultOf, PLAN_TTL_SECONDS } from '../plans.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { getHosting, hostingEvents, HostingExists, HOSTING_ENDED, PlanAlreadyUsed, requestHosting, unrequestHosting, type HostingRow } from '../../storage/db/hosting.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { declaredContractOf } from '../../storage/labContract.ts';
import { CONTROL_TASK_QUEUE, hostingWorkflowId } from '../../kernel/workflowNames.ts';
import type { ActionRequest, HostingState } from '../../workflows/hosting.ts';
import { ownedLab, prepareHosting, recheckHosting, type HostingProposal, type HostingRequest } from './prepare.ts';
import { hostingView } from './view.ts';
import { visibleHostedRelease } from './release.ts';
import { hostingActionUpdate, hostingLifecycleWorkflow } from '../../workflows/hosting.ts';
import { acceptAndStart } from '../acceptAndStart.ts';

export const hostingTools: ToolDef[] = [
  {
    name: 'hosting_get', scope: 'runs:read', readOnly: true,
    description: "Read an owned lab's hosting approval, exact release, deployment checks and status.",
    input: { path: { lab_id: id('lab') } },
    output: hostingRecord,
  },
  {
    name: 'hosting_update', scope: 'runs:write', readOnly: false, destructive: true,
    description: 'Record an authorized hosting lifecycle change (pause, resume, retire); workers apply it asynchronously.',
    input: { path: { lab_id: id('lab') }, body: obj({ revision: { type: 'integer', minimum: 0 }, action: { enum: ['pause', 'resume', 'retire'] } }, ['revision', 'action']) },
    output: hostingRecord,
  },
  {
    name: 'hosting_prepare', scope: 'runs:write', readOnly: true,
    description: 'Validate and digest an exact hosting request; no hosting compute starts.',
    input: {
      path: { lab_id: id('lab') },
      body: obj({
        release: obj({ reference: str(300), sha256: digestInput }, ['reference', 'sha256']),
        compute_profile_id: str(64), min_instances: { type: 'integer', minimum: 0, maximum: 10 },
        max_instances: { type: 'integer', minimum: 1, maximum: 10 }, visibility: { enum: ['private', 'team', 'public'] },
      }, ['release']),
    },
    output: hostingPlan,
  },
  {
    name: 'hosting_execute', scope: 'runs:write', readOnly: false, idempotent: true,
    description: 'Execute an approved hosting plan through the existing hosted-lab lifecycle.',
    input: { body: planExecute },
    output: hostingRecord,
  },
  {
    name: 'hosted_release_get', scope: 'runs:read', readOnly: true,
    description: 'Read accessible hosting inputs and bounds without exposing private smoke fixtures.',
    input: { path: { reference: str(300) }, query: { sha256: digestInput }, requiredQuery: ['sha256'] },
    output: hostedRelease,
  },
];

async function ownedHosting(ctx: ToolContext, labId: string): Promise<HostingRow> {
  await ownedLab(ctx.deps, ctx.caller, labId);
  const h = await getHosting(ctx.deps.db, labId, ctx.caller.account.id);
  if (!h) throw errors.notFound('hosting_not_found', 'hosting for this lab', 'lab_id');
  return h;
}

async function fullView(ctx: ToolContext, labId: string) {
  const h = (await getHosting(ctx.deps.db, labId, ctx.caller.account.id))!;
  return hostingView(h, await hostingEvents(ctx.deps.db, labId, h.generation));
}

/** A workflow's refusal of an update, answered as the 409 its failure type names. */
function refusal(err: unknown): ApiError | null {
  if (!(err instanceof WorkflowUpdateFailedError)) return null;
  const cause = err.cause instanceof ApplicationFailure ? err.cause : null;
  const code = cause?.type === 'revision_conflict' ? 'revision_conflict' : 'invalid_state';
  return new ApiError(409, code, cause?.message ?? 'The hosting refused this change.', code === 'revision_conflict' ? 'revision' : 'action');
}

const HANDLERS: Record<string, ToolDef['handler']> = {
  async hosting_prepare(input, ctx) {
    const { proposal, findings, release, profile, smokeInputs } = await prepareHosting(ctx.deps, ctx.caller, input.lab_id, input as HostingRequest);
    const plan = await createPlan(ctx.deps.db, { accountId: ctx.caller.account.id, kind: 'hosting', proposal, findings, ttlSeconds: PLAN_TTL_SECONDS });
    const hourly = microsToUsd(proposal.hourly_micros);
    return {
      body: {
        object: 'hosting_plan', ...planView(plan), lab_id: proposal.lab_id,
        release: { release_id: release.id, reference: proposal.reference, sha256: proposal.package_sha256 },
        // The caller owns the lab: only an owner ever sees the fixtures (rule 13).
        smoke_inputs: smokeInputs, smoke_inputs_sha256: proposal.smoke_inputs_sha256,
        compute: {
          profile: profile.id, kind: profile.kind, vcpus: profile.vcpus, memory_mib: profile.memory_mib, gpu: profile.gpu,
          min_instances: proposal.min_instances, max_instances: proposal.max_instances, max_runtime_seconds: profile.max_runtime_seconds,
        },
        cost: {
          hourly_usd: hourly, price_per_second_usd: microsToUsd(profile.price_per_second_micros),
          caveat: `While ready, ${proposal.min_instances} warm instance(s) of ${profile.id} cost $${hourly} per hour to this account, until paused or retired; invocations are charged to whoever invokes them.`,
        },
        approval: { required: proposal.approval_required, reasons: proposal.approval_reasons },
        visibility: proposal.visibility,
      },
      next_actions: plan.status === 'ready'
        ? [{ tool: 'hosting_execute', description: 'After the owner approves this digest and the standing cost, request the hosting.', arguments: { plan_id: plan.id, plan_sha256: plan.plan_sha256 } }]
        : [],
    };
  },

  async hosting_execute(input, ctx) {
    const plan = await approvedPlan(ctx.deps.db, ctx.caller.account.id, 'hosting', input.plan_id, input.plan_sha256);
    const p = plan.proposal as HostingProposal;
    await recheckHosting(ctx.deps, ctx.caller, p);
    await acceptAndStart(ctx.deps.temporal, {
      record: () => requestHosting(ctx.deps.db, {
        lab_id: p.lab_id, account_id: ctx.caller.account.id, release_id: p.release_id, reference: p.reference, package_sha256: p.package_sha256,
        compute_profile: p.compute_profile, min_instances: p.min_instances, max_instances: p.max_instances, visibility: p.visibility, plan_id: plan.id,
        approval: { required: p.approval_required, reasons: p.approval_reasons, decision: null, actor: null, note: null, decided_at: null },
      }),
      refusal: async (err) => {
        if (err instanceof PlanAlreadyUsed) return planUsed(await resultOf(ctx.deps.db, ctx.caller.account.id, plan.id));
        if (err instanceof HostingExists) return new ApiError(409, 'invalid_state', 'This lab is already hosted; retire its hosting before requesting another.', 'plan_id');
        return null;
      },
      workflow: hostingLifecycleWorkflow,
      start: (recorded) => ({
        taskQueue: CONTROL_TASK_QUEUE, workflowId: hostingWorkflowId(p.lab_id),
        args: [{
          labId: p.lab_id, generation: recorded.row.generation, profile: p.compute_profile, status: 'requested', revision: 1, approvalRequired: p.approval_required, review: null,
        } satisfies HostingState],
        ...workflowMetadata(ctx.deps.config.baseUrl, {
          attributes: { account: ctx.caller.account.id, kind: 'hosting', ref: p.reference },
          summary: `hosting of ${p.reference} on ${p.compute_profile} (${p.min_instances}–${p.max_instances} instances, ${p.visibility}) for ${ctx.caller.account.id}`,
          facts: [`Hosting of lab ${p.lab_id}, generation ${recorded.row.generation}${p.approval_required ? ': waits for an operator\'s review' : ''}.`],
          resource: `/labs/${p.lab_id}/hosting`, page: 'hosting',
        }),
      }),
      startOptions: { awaitPreviousMs: 5000 },
      undo: (recorded) => unrequestHosting(ctx.deps.db, recorded.row, recorded.previous),
    });
    return {
      body: await fullView(ctx, p.lab_id),
      warnings: [{ code: 'not_ready', message: 'A recorded request is not a ready deployment: read the hosting until its checks finish (and, for public or GPU hosting, an operator approves).' }],
      next_actions: [{ tool: 'hosting_get', description: 'Follow the deployment checks and status.', arguments: { lab_id: p.lab_id } }],
    };
  },

  async hosted_release_get(input, ctx) {
    const { release, hosting } = await visibleHostedRelease(ctx.deps, ctx.caller, input.reference, input.sha256);
    const profile = (await ctx.deps.profiles(hosting.compute_profile))!;
    return {
      body: {
        object: 'hosted_release', reference: hosting.reference, sha256: hosting.package_sha256, status: hosting.status, ready: hosting.status === 'ready',
        // The contract as declared (units, bounds, defaults); the smoke fixtures are never shown (rule 13).
        ...declaredContractOf(release.manifest),
        compute: { profile: profile.id, kind: profile.kind, min_instances: hosting.min_instances, max_instances: hosting.max_instances, max_runtime_seconds: profile.max_runtime_seconds, price_per_second_usd: microsToUsd(profile.price_per_second_micros) },
      },
    };
  },

  async hosting_get(input, ctx) {
    await ownedHosting(ctx, input.lab_id);
    return { body: await fullView(ctx, input.lab_id) };
  },

  async hosting_update(input, ctx) {
    const h = await ownedHosting(ctx, input.lab_id);
    if (HOSTING_ENDED.includes(h.status)) throw new ApiError(409, 'invalid_state', `This hosting has ended (${h.status}); request a new one.`, 'action');
    const change: ActionRequest = { revision: input.revision, action: input.action, actor: `key:${ctx.caller.key.id}` };
    try {
      // One change per revision: a PATCH retried after its answer was lost is the same
      // update, answered with its outcome, not refused as stale.
      await ctx.deps.temporal.executeUpdate(hostingWorkflowId(h.lab_id), hostingActionUpdate, [change], { updateId: `g${h.generation}:r${input.revision}:${input.action}` });
    } catch (err) {
      const refused = refusal(err);
      if (refused) throw refused;
      if (err instanceof WorkflowNotFoundError) throw new ApiError(409, 'invalid_state', 'This hosting has ended; request a new one.', 'action');
      throw err;
    }
    return { body: await fullView(ctx, h.lab_id), warnings: [{ code: 'applied_asynchronously', message: `The ${input.action} is recorded; the deployment applies it shortly. Read the hosting to see it done.` }] };
  },
};

for (const t of hostingTools) {
  const h = HANDLERS[t.name];
  if (h) t.handler = h;
}


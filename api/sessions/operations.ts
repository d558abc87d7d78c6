import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { NextStep, ToolContext, ToolDef } from '../tools/tool.ts';
import { str, nullableStr, limit, cursor, arr, obj, planExecute, id } from '../schemas/common.ts';
import { ApiError, errors } from '../errors.ts';
import { approvedPlan, planUsed, planView, resultOf, PLAN_TTL_SECONDS } from '../plans.ts';
import { decodeCursor, pageBody } from '../pagination.ts';
import { createPlan, type Finding } from '../../storage/db/plans.ts';
import { createSession, deleteSession, externalSessions, getSession, listSessions, recentProgress, type Requirement, type SessionRow } from '../../storage/db/sessions.ts';
import { newId } from '../../storage/ids.ts';
import { getRevision, getWorkspace } from '../../storage/db/workspaces.ts';
import { proposeChange, readAuthoringSkill } from '../workspaces/nextSteps.ts';
import { getLab } from '../../storage/db/labs.ts';
import { CONTROL_TASK_QUEUE, sessionWorkflowId } from '../../kernel/workflowNames.ts';
import { SESSION_REFUSALS, type ChangeRequest, type ProgressRequest, type SessionState } from '../../workflows/session.ts';
import { EVIDENCE_KINDS, EVIDENCE_REF_PATTERN } from '../../kernel/evidence.ts';
import type { Validation } from '../../activities/sessions/activities.ts';
import { RECENT_PROGRESS, sessionNextActions, sessionSummary, sessionView } from './view.ts';
import { sessionChangeUpdate, sessionCompletionUpdate, sessionExternalUpdate, sessionProgressUpdate, sessionValidationUpdate, sessionWorkflow, sessionWorkspaceUpdate } from '../../workflows/session.ts';
import type { UpdateDefinition } from '@temporalio/common';
import { acceptAndStart } from '../acceptAndStart.ts';
import { SESSION_STATUSES, sessionCompletionAnswer, sessionContractPlan, sessionExecutionPlan, sessionPage, sessionProgress, sessionRecord, sessionValidationAnswer, sessionWorkspace } from './schemas.ts';

const sessionPath = { session_id: id('ses') };
const evidenceRef = str(2000, { minLength: 1, pattern: EVIDENCE_REF_PATTERN });
const stepId = str(64, { minLength: 1, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' });
const requirement = obj({ id: stepId, text: str(2000, { minLength: 1 }), evidence_kind: { enum: EVIDENCE_KINDS } }, ['id', 'text', 'evidence_kind']);
const step = obj({ id: stepId, title: str(500, { minLength: 1 }), depends_on: arr(stepId, { maxItems: 50, uniqueItems: true }) }, ['id', 'title']);

export const sessionTools: ToolDef[] = [
  { name: 'session_create', scope: 'workspaces:write', readOnly: false, description: 'Create a durable collaboration session.', input: { body: obj({ title: str(200, { minLength: 1 }), goal: str(2000) }, ['title']) }, output: sessionRecord },
  { name: 'session_list', scope: 'workspaces:read', readOnly: true, description: 'List collaboration sessions, newest first.', input: { query: { status: { enum: [...SESSION_STATUSES, null] }, limit, cursor } }, output: sessionPage },
  { name: 'session_get', scope: 'workspaces:read', readOnly: true, description: 'Resume an external collaboration: contract, plan with step states, recent progress, validation, completion, conversations and next actions.', input: { path: sessionPath }, output: sessionRecord },
  {
    name: 'session_external_attach', scope: 'workspaces:write', readOnly: false, description: 'Attach an external conversation to a session.',
    input: { path: sessionPath, body: obj({ provider: str(64, { minLength: 1 }), external_id: str(200, { minLength: 1 }), url: { type: 'string', format: 'uri', maxLength: 2000 } }, ['provider', 'external_id']) },
    output: sessionRecord,
  },
  {
    name: 'session_contract_prepare', scope: 'workspaces:write', readOnly: true, description: 'Propose session requirements; returns a plan digest.',
    input: { path: sessionPath, body: obj({ requirements: arr(requirement, { minItems: 1, maxItems: 100 }) }, ['requirements']) },
    output: sessionContractPlan,
  },
  {
    name: 'session_execution_prepare', scope: 'workspaces:write', readOnly: true, description: 'Propose an external execution plan (acyclic steps); returns a plan digest.',
    input: { path: sessionPath, body: obj({ steps: arr(step, { minItems: 1, maxItems: 200 }) }, ['steps']) },
    output: sessionExecutionPlan,
  },
  { name: 'session_change_apply', scope: 'workspaces:write', readOnly: false, idempotent: true, description: 'Apply approved session state (a contract or execution plan).', input: { body: planExecute }, output: sessionRecord },
  {
    name: 'session_progress_record', scope: 'workspaces:write', readOnly: false, description: 'Record external plan progress on a step whose dependencies are done.',
    input: {
      path: sessionPath,
      body: obj({ step_id: stepId, status: { enum: ['started', 'done', 'blocked', 'skipped'] }, note: nullableStr(2000), evidence: arr(evidenceRef, { maxItems: 50 }) }, ['step_id', 'status']),
    },
    output: sessionProgress,
  },
  {
    name: 'session_validate', scope: 'workspaces:write', readOnly: false, description: 'Bind evidence to requirements and evaluate each one by reading the records its evidence names: satisfied, unsatisfied or unknown, with reasons.',
    input: { path: sessionPath, body: obj({ evidence: arr(obj({ requirement_id: stepId, ref: evidenceRef }, ['requirement_id', 'ref']), { maxItems: 500 }) }) },
    output: sessionValidationAnswer,
  },
  {
    name: 'session_completion_check', scope: 'workspaces:write', readOnly: false,
    description: 'Check whether every requirement is satisfied and every step done; when nothing is missing the session is completed and becomes read-only.', input: { path: sessionPath, body: obj({}) },
    output: sessionCompletionAnswer,
  },
  {
    name: 'session_workspace_create', scope: 'workspaces:write', readOnly: false, description: 'Create the session\'s lab workspace once (a second call returns the same one): a private lab named from the title under the naming rules.',
    input: { path: sessionPath, body: obj({ title: str(200, { minLength: 1 }) }) },
    output: sessionWorkspace,
  },
];

async function ownedSession(ctx: ToolContext, sessionId: string): Promise<SessionRow> {
  const s = await getSession(ctx.deps.db, sessionId, ctx.caller.account.id);
  if (!s) throw errors.notFound('session_not_found', 'session', 'session_id');
  return s;
}

/** A change the session's workflow refused (its validator), answered as the code it names. */
function refusal(err: unknown, param: string | null): ApiError | null {
  if (!(err instanceof WorkflowUpdateFailedError) || !(err.cause instanceof ApplicationFailure)) return null;
  const type = err.cause.type as keyof typeof SESSION_REFUSALS | undefined;
  if (!type || !(type in SESSION_REFUSALS)) return null;
  if (type === 'plan_unavailable' || type === 'plan_used') return new ApiError(409, 'plan_unavailable', err.cause.message, 'plan_id', { result_ref: null });
  const named = err.cause.details?.[0];
  return new ApiError(SESSION_REFUSALS[type], type, err.cause.message, typeof named === 'string' ? named : param);
}

/** Why a session that failed takes no change (its workflow is gone: the reconciliation's finding). */
const failedMessage = (s: SessionRow) => `This session failed; it is read-only. ${s.error?.message ?? ''}`.trim();

/** Sends an update to the session's workflow; refusals are the caller's, a closed workflow is 409. */
async function update<R, Args extends unknown[]>(ctx: ToolContext, s: SessionRow, definition: UpdateDefinition<R, Args>, args: Args, param: string | null, updateId?: string): Promise<R> {
  const closed = () => new ApiError(409, 'session_completed', 'This session is complete; it is read-only.', 'session_id');
  if (s.status === 'completed') throw closed();
  if (s.status === 'failed') throw new ApiError(409, 'session_failed', failedMessage(s), 'session_id');
  // One id for every attempt: the workflow answers an update id it has seen (across
  // continue-as-new) with its first answer, so a retry never applies a change twice.
  const id = updateId ?? randomUUID();
  for (let attempt = 1; ; attempt++) {
    try {
      return await ctx.deps.temporal.executeUpdate(sessionWorkflowId(s.id), definition, args, { updateId: id });
    } catch (err) {
      const refused = refusal(err, param);
      if (refused) throw refused;
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      // Completed (or failed) between our read and the update: its workflow has ended.
      const now = await getSession(ctx.deps.db, s.id, s.account_id);
      if (now?.status === 'completed') throw closed();
      if (now?.status === 'failed') throw new ApiError(409, 'session_failed', failedMessage(now), 'session_id');
      // Sent to a run that then continued as new before taking it: the update is gone
      // with that run, and the same id goes to the new one.
      if (!/update .* not found/i.test(err.message) || attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}

/** Unique ids, each named on its own item when repeated. */
function uniqueIds(items: Array<{ id: string }>, field: string): void {
  const seen = new Set<string>();
  items.forEach((x, i) => {
    if (seen.has(x.id)) throw errors.validation('duplicate_id', `${x.id} appears twice.`, `${field}[${i}].id`);
    seen.add(x.id);
  });
}

/** Steps whose dependencies all exist and form no cycle (422 naming the step otherwise). */
function checkSteps(steps: Array<{ id: string; depends_on?: string[] }>): void {
  uniqueIds(steps, 'steps');
  const byId = new Map(steps.map((s) => [s.id, s.depends_on ?? []]));
  steps.forEach((s, i) => {
    for (const d of s.depends_on ?? []) {
      if (!byId.has(d)) throw errors.validation('step_dependency_unknown', `Step ${s.id} depends on ${d}, which is not a step of this plan.`, `steps[${i}].depends_on`);
      if (d === s.id) throw errors.validation('steps_cyclic', `Step ${s.id} depends on itself.`, `steps[${i}].depends_on`);
    }
  });
  // Depth-first, colouring: meeting a step still on the path is a cycle.
  const mark = new Map<string, 'open' | 'done'>();
  const visit = (id: string, path: string[]): void => {
    if (mark.get(id) === 'done') return;
    if (mark.get(id) === 'open') {
      const cycle = [...path.slice(path.indexOf(id)), id];
      throw errors.validation('steps_cyclic', `The steps depend on each other in a cycle: ${cycle.join(' → ')}.`, `steps[${steps.findIndex((s) => s.id === id)}].depends_on`);
    }
    mark.set(id, 'open');
    for (const d of byId.get(id)!) visit(d, [...path, id]);
    mark.set(id, 'done');
  };
  for (const s of steps) visit(s.id, []);
}

/** A contract or execution plan, prepared on the session's current version. */
async function prepareChange(ctx: ToolContext, s: SessionRow, change: { contract?: { requirements: Requirement[] }; executionPlan?: { steps: Array<{ id: string; title: string; depends_on: string[] }> } }) {
  const findings: Finding[] = [];
  if (s.status === 'completed') findings.push({ severity: 'blocking', code: 'session_completed', message: 'This session is complete; it is read-only.', path: null });
  if (s.status === 'failed') findings.push({ severity: 'blocking', code: 'session_failed', message: failedMessage(s), path: null });
  const proposal = { session_id: s.id, version: s.version, ...change };
  const plan = await createPlan(ctx.deps.db, { accountId: ctx.caller.account.id, kind: 'session_change', proposal, findings, ttlSeconds: PLAN_TTL_SECONDS });
  return {
    body: { object: 'session_change_plan', ...planView(plan), session_id: s.id, prepared_on_version: s.version, ...(change.contract ? { contract: change.contract } : { execution_plan: change.executionPlan }) },
    next_actions: plan.status === 'ready' ? [{ tool: 'session_change_apply', description: 'After the user approves this digest, apply exactly this plan.', arguments: { plan_id: plan.id, plan_sha256: plan.plan_sha256 } }] : [],
  };
}

const HANDLERS: Record<string, ToolDef['handler']> = {
  async session_create(input, ctx) {
    const sid = newId('ses');
    const state: SessionState = { sessionId: sid, version: 0, requirements: [], steps: [], seq: 0, externals: [], historyBound: ctx.deps.config.sessions.historyBound };
    const s = await acceptAndStart(ctx.deps.temporal, {
      record: () => createSession(ctx.deps.db, { id: sid, account_id: ctx.caller.account.id, title: input.title, goal: input.goal ?? null }),
      workflow: sessionWorkflow,
      start: () => ({
        taskQueue: CONTROL_TASK_QUEUE, workflowId: sessionWorkflowId(sid), args: [state],
        ...workflowMetadata(ctx.deps.config.baseUrl, {
          attributes: { account: ctx.caller.account.id, kind: 'session', ref: sid },
          summary: `collaboration session ${sid} for ${ctx.caller.account.id}`,
          facts: [`Session ${sid}: its contract, plan, progress and conversations, changed only through approved plans.`],
          resource: `/sessions/${sid}`,
        }),
      }),
      undo: () => deleteSession(ctx.deps.db, sid),
    });
    return { body: sessionView(s, [], []), next_actions: sessionNextActions(s) };
  },

  async session_list(input, ctx) {
    const page = await listSessions(ctx.deps.db, ctx.caller.account.id, { status: input.status, limit: input.limit ?? ctx.deps.config.limits.pageDefault, after: decodeCursor(input.cursor, ['text', 'text']) });
    return { body: pageBody(page, page.rows.map(sessionSummary)) };
  },

  async session_get(input, ctx) {
    const s = await ownedSession(ctx, input.session_id);
    const [externals, recent] = await Promise.all([externalSessions(ctx.deps.db, s.id), recentProgress(ctx.deps.db, s.id, RECENT_PROGRESS)]);
    return { body: sessionView(s, externals, recent), next_actions: sessionNextActions(s) };
  },

  async session_external_attach(input, ctx) {
    const s = await ownedSession(ctx, input.session_id);
    await update(ctx, s, sessionExternalUpdate, [{ provider: input.provider, external_id: input.external_id, url: input.url ?? null }], 'external_id');
    return { body: sessionView((await getSession(ctx.deps.db, s.id, ctx.caller.account.id))!, await externalSessions(ctx.deps.db, s.id), await recentProgress(ctx.deps.db, s.id, RECENT_PROGRESS)) };
  },

  async session_contract_prepare(input, ctx) {
    const s = await ownedSession(ctx, input.session_id);
    uniqueIds(input.requirements, 'requirements');
    return prepareChange(ctx, s, { contract: { requirements: input.requirements } });
  },

  async session_execution_prepare(input, ctx) {
    const s = await ownedSession(ctx, input.session_id);
    const steps = (input.steps as Array<{ id: string; title: string; depends_on?: string[] }>).map((x) => ({ id: x.id, title: x.title, depends_on: x.depends_on ?? [] }));
    checkSteps(steps);
    return prepareChange(ctx, s, { executionPlan: { steps } });
  },

  async session_change_apply(input, ctx) {
    const plan = await approvedPlan(ctx.deps.db, ctx.caller.account.id, 'session_change', input.plan_id, input.plan_sha256);
    const p = plan.proposal as { session_id: string; version: number } & Pick<ChangeRequest, 'contract' | 'executionPlan'>;
    const s = await ownedSession(ctx, p.session_id);
    const change: ChangeRequest = { planId: plan.id, version: p.version, contract: p.contract, executionPlan: p.executionPlan };
    try {
      // The plan's id is the update's: a retry of this request is the same change.
      await update(ctx, s, sessionChangeUpdate, [change], 'plan_id', plan.id);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'plan_unavailable' && /already used/.test(err.message)) throw planUsed(await resultOf(ctx.deps.db, ctx.caller.account.id, plan.id));
      throw err;
    }
    const after = (await getSession(ctx.deps.db, s.id, ctx.caller.account.id))!;
    return { body: sessionView(after, await externalSessions(ctx.deps.db, s.id), await recentProgress(ctx.deps.db, s.id, RECENT_PROGRESS)), next_actions: sessionNextActions(after) };
  },

  async session_progress_record(input, ctx) {
    const s = await ownedSession(ctx, input.session_id);
    const entry: ProgressRequest = { step_id: input.step_id, status: input.status, note: input.note ?? null, evidence: input.evidence ?? [], actor: `key:${ctx.caller.key.id}` };
    // With an Idempotency-Key, a retry whose answer was lost is the same update: recorded once.
    const recorded = await update(ctx, s, sessionProgressUpdate, [entry], 'step_id', ctx.idempotencyKey ? `progress:${ctx.idempotencyKey}` : undefined);
    const after = (await getSession(ctx.deps.db, s.id, ctx.caller.account.id))!;
    return {
      body: { object: 'session_progress', session_id: s.id, seq: recorded.seq, step_id: entry.step_id, status: entry.status, execution_plan: after.execution_plan },
      next_actions: sessionNextActions(after),
    };
  },

  async session_validate(input, ctx) {
    const s = await ownedSession(ctx, input.session_id);
    const evidence = (input.evidence ?? []) as Array<{ requirement_id: string; ref: string }>;
    const validation = await update(ctx, s, sessionValidationUpdate, [{ evidence }], 'evidence');
    return { body: { ...validation, session_id: s.id }, next_actions: validationNextActions(s.id, validation) };
  },

  async session_completion_check(input, ctx) {
    const s = await ownedSession(ctx, input.session_id);
    const { validation, completion } = await update(ctx, s, sessionCompletionUpdate, [], 'session_id');
    return {
      body: { ...completion, session_id: s.id, validation },
      next_actions: completion.complete ? [{ tool: 'session_get', description: 'The completed session, read-only.', arguments: { session_id: s.id } }] : validationNextActions(s.id, validation),
    };
  },

  async session_workspace_create(input, ctx) {
    const s = await ownedSession(ctx, input.session_id);
    const title = input.title ?? null;
    const { workspaceId } = s.workspace_id ? { workspaceId: s.workspace_id } : await update(ctx, s, sessionWorkspaceUpdate, [{ title }], 'session_id', 'workspace');
    const ws = (await getWorkspace(ctx.deps.db, workspaceId, ctx.caller.account.id))!;
    const lab = (await getLab(ctx.deps.db, ws.lab_id, ctx.caller.account.id))!;
    const hasLab = Boolean((await getRevision(ctx.deps.db, ws.id, ws.head_revision_id))?.tree['lab.yaml']);
    return {
      body: { object: 'session_workspace', session_id: s.id, workspace_id: ws.id, lab_id: ws.lab_id, lab_name: lab.name, title: ws.title, head_revision_id: ws.head_revision_id, origin: ws.origin },
      links: { naming_skill: '/v1/skills/naming', workspace: `/v1/workspaces/${ws.id}` },
      next_actions: [...(hasLab ? [] : [readAuthoringSkill]), proposeChange(ws.id, ws.head_revision_id, hasLab)],
    };
  },
};

/** After a validation: bind evidence to what is not yet satisfied, or check completion. */
function validationNextActions(sessionId: string, v: Validation): NextStep[] {
  const open = v.requirements.filter((r) => r.status !== 'satisfied');
  if (!open.length) return [{ tool: 'session_completion_check', description: 'Every requirement is satisfied: check completion (it completes the session when every step is done).', arguments: { session_id: sessionId } }];
  return open.slice(0, 10).map((r) => ({ tool: 'session_validate', description: `Attach ${r.evidence_kind} evidence for ${r.requirement_id} (${r.status}: ${r.reason}).`, arguments: { session_id: sessionId, evidence: [{ requirement_id: r.requirement_id, ref: `${r.evidence_kind}:<id>` }] } }));
}

for (const t of sessionTools) {
  const h = HANDLERS[t.name];
  if (h) t.handler = h;
}

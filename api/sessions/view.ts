import type { ExternalSessionRow, ProgressRow, SessionRow } from '../../storage/db/sessions.ts';
import { isoTime } from '../../storage/ids.ts';
import { sessionWorkflowId } from '../../kernel/workflowNames.ts';
import { choose, type NextStep } from '../tools/tool.ts';

/** Progress entries shown when a session is resumed (the rest stay in Postgres). */
export const RECENT_PROGRESS = 20;

export function sessionSummary(s: SessionRow) {
  return {
    object: 'session', session_id: s.id, title: s.title, goal: s.goal, status: s.status, version: s.version,
    requirement_count: s.contract?.requirements.length ?? 0, step_count: s.execution_plan?.steps.length ?? 0,
    steps_done: s.execution_plan?.steps.filter((x) => x.status === 'done').length ?? 0, progress_count: s.progress_count,
    created_at: isoTime(s.created_at), updated_at: isoTime(s.updated_at), completed_at: isoTime(s.completed_at),
    error: s.error ?? null,
  };
}

export function progressView(p: ProgressRow) {
  return { seq: p.seq, step_id: p.step_id, status: p.status, note: p.note, evidence: p.evidence, actor: p.actor, recorded_at: isoTime(p.recorded_at) };
}

/** What to do next, from where the session stands. */
export function sessionNextActions(s: SessionRow): NextStep[] {
  const id = s.id;
  if (s.status !== 'open') return [];
  if (!s.contract) return [{ tool: 'session_contract_prepare', description: 'Propose what must be true at the end: requirements and the evidence each needs.', arguments: { session_id: id, requirements: choose('the requirements: each an id, a statement and the evidence kind it needs') } }];
  if (!s.execution_plan) return [{ tool: 'session_execution_prepare', description: 'Propose how it will be done: steps and what each depends on.', arguments: { session_id: id, steps: choose('the steps: each an id, a title and the steps it depends on') } }];
  const steps = s.execution_plan.steps;
  const doneIds = new Set(steps.filter((x) => x.status === 'done' || x.status === 'skipped').map((x) => x.id));
  const startable = steps.filter((x) => (x.status === 'pending' || x.status === 'blocked') && x.depends_on.every((d) => doneIds.has(d)));
  const started = steps.filter((x) => x.status === 'started');
  return [
    ...started.map((x) => ({ tool: 'session_progress_record', description: `Record step ${x.id} (${x.title}) done, with its evidence.`, arguments: { session_id: id, step_id: x.id, status: 'done' } })),
    ...startable.map((x) => ({ tool: 'session_progress_record', description: `Start step ${x.id} (${x.title}).`, arguments: { session_id: id, step_id: x.id, status: 'started' } })),
  ].slice(0, 10);
}

/** Everything needed to pick the work up: contract, plan with step states, recent progress, conversations. */
export function sessionView(s: SessionRow, externals: ExternalSessionRow[], recent: ProgressRow[]) {
  return {
    ...sessionSummary(s),
    workflow_id: sessionWorkflowId(s.id),
    contract: s.contract,
    execution_plan: s.execution_plan,
    progress: { count: s.progress_count, recent: recent.map(progressView), shown: recent.length },
    validation: s.validation,
    completion: s.completion,
    external_sessions: externals.map((e) => ({ provider: e.provider, external_id: e.external_id, url: e.url, attached_at: isoTime(e.attached_at) })),
    workspace_id: s.workspace_id,
  };
}

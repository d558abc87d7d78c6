import {
  ApplicationFailure, condition, continueAsNew, defineQuery, defineUpdate, proxyActivities, setHandler, workflowInfo, allHandlersFinished, currentUpdateInfo,
} from '@temporalio/workflow';
import type { Completion, EvidenceBinding, Requirement, SessionActivities, Step, StepStatus, Validation } from '../activities/sessions/activities.ts';
import { oneAtATime } from './serial.ts';
import { explained } from './explain.ts';

/** What the session's workflow holds (and carries into a continued run): identities and states, never the progress itself. */
export interface SessionState {
  sessionId: string;
  version: number;
  requirements: string[];
  steps: Step[];
  /** The last progress entry's number. */
  seq: number;
  /** `provider/external_id` of each attached conversation. */
  externals: string[];
  /** Past this many history events the workflow continues as a new run. */
  historyBound: number;
  /** The answers of the latest updates by update id, carried into a continued run (see `remembered`). */
  answered?: Array<[string, unknown]>;
}

/** How many update answers a session remembers. */
const ANSWERED = 256;

export interface ExternalRequest { provider: string; external_id: string; url: string | null }
export interface ChangeRequest { planId: string; version: number; contract?: { requirements: Requirement[] }; executionPlan?: { steps: Array<Omit<Step, 'status'>> } }
export interface ProgressRequest { step_id: string; status: Exclude<StepStatus, 'pending'>; note: string | null; evidence: string[]; actor: string | null }

export const sessionExternalUpdate = defineUpdate<{ attached: string }, [ExternalRequest]>('sessionExternal');
export const sessionChangeUpdate = defineUpdate<{ version: number }, [ChangeRequest]>('sessionChange');
export const sessionProgressUpdate = defineUpdate<{ seq: number }, [ProgressRequest]>('sessionProgress');
export const sessionValidationUpdate = defineUpdate<Validation, [{ evidence: EvidenceBinding[] }]>('sessionValidation');
export const sessionCompletionUpdate = defineUpdate<{ validation: Validation; completion: Completion }, []>('sessionCompletion');
export const sessionWorkspaceUpdate = defineUpdate<{ workspaceId: string }, [{ title: string | null }]>('sessionWorkspace');
export const sessionStateQuery = defineQuery<{ version: number; seq: number; steps: Step[]; runId: string }>('sessionState');

/** Failure types the validators refuse with; the api answers each with its own status and code. */
export const SESSION_REFUSALS = {
  external_session_exists: 409, plan_unavailable: 409, plan_used: 409, execution_plan_missing: 409,
  step_not_found: 422, step_dependencies_unfinished: 409, contract_missing: 409, requirement_not_found: 422, session_completed: 409,
} as const;

// Regular activities: each update's workflow task ends at once rather than holding the
// workflow while a write runs, so many concurrent updates queue cleanly. A write that
// cannot be done yet (Postgres down) is retried until it can: the caller meanwhile hears
// 503, and a retry with the same Idempotency-Key joins the same update.
const control = proxyActivities<SessionActivities>({ startToCloseTimeout: '1 minute', retry: { initialInterval: '1 second', maximumInterval: '30 seconds' } });
const refuse = (type: keyof typeof SESSION_REFUSALS, message: string) => ApplicationFailure.create({ type, message, nonRetryable: true });

/**
 * One session, workflow id `session-<id>`, long-lived: its state changes only through
 * updates whose validators refuse what cannot apply (synchronously, as the caller's 4xx),
 * each change recorded in Postgres by an activity before the caller hears back, one at a
 * time in the order accepted. Past a bounded history it continues as a new run.
 */
export async function sessionWorkflow(initial: SessionState): Promise<void> {
  const state: SessionState = { ...initial, steps: initial.steps.map((s) => ({ ...s })) };
  const serial = oneAtATime();
  // Set by a completion that found nothing missing: every later change is refused, and the workflow ends.
  let completed = false;
  const open = () => {
    if (completed) throw refuse('session_completed', 'This session is complete; it is read-only.');
  };

  // An update the server aborted as the run continued as new is retried by its client on
  // the next run, under the same id, even when this run had already applied it: its
  // answer is remembered (across runs) and given again, and its validator lets it through.
  const answered = new Map<string, unknown>(initial.answered ?? []);
  const repeat = () => {
    const id = currentUpdateInfo()?.id;
    return id !== undefined && answered.has(id) ? { answer: answered.get(id) } : undefined;
  };
  const remembered = <A, R>(handler: (a: A) => Promise<R>, validator: (a: A) => void) => ({
    handler: (a: A): Promise<R> => {
      const seen = repeat();
      if (seen) return Promise.resolve(seen.answer as R);
      const id = currentUpdateInfo()?.id;
      return handler(a).then((r) => {
        if (id !== undefined) {
          answered.set(id, r);
          if (answered.size > ANSWERED) answered.delete(answered.keys().next().value!);
        }
        return r;
      });
    },
    validator: (a: A) => {
      if (!repeat()) validator(a);
    },
  });

  setHandler(sessionStateQuery, () => ({ version: state.version, seq: state.seq, steps: state.steps, runId: workflowInfo().runId }));
  // For operators: counts and step ids, never a title, a note or a conversation's id.
  const tell = explained(() => ({
    object: 'session', session_id: state.sessionId, status: completed ? 'completed' : 'open', version: state.version,
    requirements: state.requirements.length, steps: state.steps.map((s) => ({ id: s.id, status: s.status })),
    progress_entries: state.seq, conversations: state.externals.length,
  }), (v) => {
    const by = (status: StepStatus) => v.steps.filter((s) => s.status === status).length;
    const plan = v.steps.length ? `${by('done')} of ${v.steps.length} steps done, ${by('started')} started, ${by('blocked')} blocked` : 'no execution plan yet';
    const n = (k: number, one: string, many: string) => `${k} ${k === 1 ? one : many}`;
    return `**${v.status === 'completed' ? 'Completed' : `Version ${v.version}`}**: ${n(v.requirements, 'requirement', 'requirements')}; ${plan}.`
      + `\n\n${n(v.progress_entries, 'progress entry', 'progress entries')}; ${n(v.conversations, 'conversation', 'conversations')} attached.`;
  });

  // Validators refuse early; each step checks again when its turn comes, since updates
  // admitted together were each validated against the state before any of them applied.
  const checkExternal = (e: ExternalRequest) => {
    open();
    if (state.externals.includes(`${e.provider}/${e.external_id}`)) throw refuse('external_session_exists', `${e.provider} conversation ${e.external_id} is already attached to this session.`);
  };
  const checkChange = (c: ChangeRequest) => {
    open();
    if (c.version !== state.version) throw refuse('plan_unavailable', `This plan was prepared on version ${c.version} of the session, which is now at version ${state.version}; prepare it again.`);
  };
  /** Why a progress entry cannot apply to these steps (undefined when it can). */
  const progressRefusal = (steps: Step[], p: ProgressRequest) => {
    if (completed) return refuse('session_completed', 'This session is complete; it is read-only.');
    if (!steps.length) return refuse('execution_plan_missing', 'This session has no execution plan yet: apply one before recording progress.');
    const step = steps.find((s) => s.id === p.step_id);
    if (!step) return refuse('step_not_found', `No step ${p.step_id} in the execution plan.`);
    if (p.status === 'started' || p.status === 'done') {
      const waiting = step.depends_on.filter((d) => steps.find((s) => s.id === d)?.status !== 'done');
      if (waiting.length) return refuse('step_dependencies_unfinished', `Step ${p.step_id} depends on ${waiting.join(', ')}, not done yet.`);
    }
    return undefined;
  };

  // Each change is recorded first and only then held: the state never runs ahead of Postgres.
  const external = remembered((e: ExternalRequest) => serial(async () => {
    checkExternal(e);
    await control.recordExternalSession({ session_id: state.sessionId, provider: e.provider, external_id: e.external_id, url: e.url });
    state.externals.push(`${e.provider}/${e.external_id}`);
    tell();
    return { attached: `${e.provider}/${e.external_id}` };
  }), checkExternal);
  setHandler(sessionExternalUpdate, external.handler, { validator: external.validator });

  const change = remembered((c: ChangeRequest) => serial(async () => {
    checkChange(c);
    const version = state.version + 1;
    let steps: Step[] | undefined;
    if (c.executionPlan) {
      // A step that stays keeps its state; a new one starts pending.
      const before = new Map(state.steps.map((s) => [s.id, s.status]));
      steps = c.executionPlan.steps.map((s) => ({ ...s, status: before.get(s.id) ?? 'pending' }));
    }
    const applied = await control.recordSessionChange({ sessionId: state.sessionId, planId: c.planId, version, contract: c.contract, executionPlan: steps && { steps } });
    // The plan was used by something else (the api checked it was not; its update id is the plan's).
    if (!applied) throw refuse('plan_used', 'This plan was already used; one approval authorizes one result.');
    state.version = version;
    if (c.contract) state.requirements = c.contract.requirements.map((r) => r.id);
    if (steps) state.steps = steps;
    tell();
    return { version };
  }), checkChange);
  setHandler(sessionChangeUpdate, change.handler, { validator: change.validator });

  // Progress entries wait in one queue and are written in batches, one activity per
  // batch, in the order they were accepted: a hundred concurrent posts take a few
  // round trips, not a hundred. Each is checked again against the entries before it.
  let queue: Array<{ p: ProgressRequest; resolve: (r: { seq: number }) => void; reject: (e: unknown) => void }> = [];
  const flushProgress = async () => {
    const taken = queue;
    queue = [];
    let { seq, steps } = state;
    const rows: Parameters<SessionActivities['recordSessionProgress']>[0] = [];
    const answers: Array<() => void> = [];
    for (const w of taken) {
      const refused = progressRefusal(steps, w.p);
      if (refused) {
        answers.push(() => w.reject(refused));
        continue;
      }
      seq += 1;
      steps = steps.map((s) => (s.id === w.p.step_id ? { ...s, status: w.p.status } : s));
      const answer = { seq };
      rows.push({ session_id: state.sessionId, seq, step_id: w.p.step_id, status: w.p.status, note: w.p.note, evidence: w.p.evidence, actor: w.p.actor });
      answers.push(() => w.resolve(answer));
    }
    try {
      if (rows.length) await control.recordSessionProgress(rows, steps);
    } catch (err) {
      for (const w of taken) w.reject(err);
      return;
    }
    state.seq = seq;
    state.steps = steps;
    tell();
    for (const a of answers) a();
  };
  const progress = remembered((p: ProgressRequest) => new Promise<{ seq: number }>((resolve, reject) => {
    queue.push({ p, resolve, reject });
    if (queue.length === 1) void serial(flushProgress);
  }), (p: ProgressRequest) => {
    const refused = progressRefusal(state.steps, p);
    if (refused) throw refused;
  });
  setHandler(sessionProgressUpdate, progress.handler, { validator: progress.validator });

  const checkValidation = ({ evidence }: { evidence: EvidenceBinding[] }) => {
    open();
    if (!state.requirements.length) throw refuse('contract_missing', 'This session has no contract yet: apply one before validating.');
    const i = evidence.findIndex((e) => !state.requirements.includes(e.requirement_id));
    if (i >= 0) throw ApplicationFailure.create({ type: 'requirement_not_found', message: `No requirement ${evidence[i]!.requirement_id} in the contract.`, nonRetryable: true, details: [`evidence[${i}].requirement_id`] });
  };
  setHandler(sessionValidationUpdate, (v) => serial(async () => {
    checkValidation(v);
    return control.validateSession(state.sessionId, v.evidence);
  }), { validator: checkValidation });

  setHandler(sessionCompletionUpdate, () => serial(async () => {
    open();
    const out = await control.completeSession(state.sessionId);
    if (out.completion.complete) completed = true;
    tell();
    return out;
  }), { validator: () => open() });

  setHandler(sessionWorkspaceUpdate, ({ title }) => serial(async () => {
    open();
    return control.createSessionWorkspace(state.sessionId, title);
  }), { validator: (_: { title: string | null }) => open() });

  await condition(() => completed || workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > state.historyBound);
  // Between changes: every update accepted in this run answers first.
  await condition(allHandlersFinished);
  if (completed) return;
  await continueAsNew<typeof sessionWorkflow>({ ...state, answered: [...answered] });
}

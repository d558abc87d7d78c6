/**
 * Output schemas of the session routes: the session record (sessionView), its
 * summary (sessionSummary), the change plans, progress, validation and completion
 * answers. Contracts and execution plans are the user's documents, but their shape is
 * fixed by the prepare routes' input schemas, so they are described here as stored.
 */
import { arr, count, cursorPage, id, nullableStr, nullableTime, obj, planRecord, str, time, uuid, type JsonSchema } from '../schemas/common.ts';
import { passport } from '../schemas/passport.ts';
import { RUN_STATUSES } from '../runs/schemas.ts';
import { CHECKS } from '../../storage/passportDocument.ts';
import { EVIDENCE_KINDS } from '../../kernel/evidence.ts';

/** storage/db/sessions.ts StepStatus: a step starts `pending`; progress moves it to the others. */
export const STEP_STATUSES = ['pending', 'started', 'done', 'blocked', 'skipped'] as const;
/** What a progress entry may set a step to (every step status but `pending`). */
const PROGRESS_STATUSES = STEP_STATUSES.filter((s) => s !== 'pending');
/** storage/db/sessions.ts SessionRow status. */
export const SESSION_STATUSES = ['open', 'completed', 'failed'] as const;
/** A verdict on a requirement, and on each piece of evidence (activities/sessions/evidence.ts). */
const VERDICTS = ['satisfied', 'unsatisfied', 'unknown'] as const;

const sessionId = id('ses');
const stepId = str(64);
const evidenceKind = { enum: [...EVIDENCE_KINDS], description: 'The kind of record that can satisfy the requirement (`note` is taken as stated).' };

/** A requirement of a contract, as proposed and as applied. */
const requirement = obj({ id: stepId, text: str(2000), evidence_kind: evidenceKind }, ['id', 'text', 'evidence_kind']);
const contract = obj({ requirements: arr(requirement) }, ['requirements'], { description: 'What must be true at the end: requirements and the evidence each needs.' });

/** A step as proposed (no state yet). */
const proposedStep = obj({ id: stepId, title: str(500), depends_on: arr(stepId, { description: 'Steps that must be done before this one starts.' }) }, ['id', 'title', 'depends_on']);
/** A step of the applied plan, with the state progress left it in. */
const step = obj({
  ...(proposedStep.properties as Record<string, JsonSchema>),
  status: { enum: [...STEP_STATUSES], description: 'A step kept across plan changes keeps its state; a new one starts `pending`.' },
}, ['id', 'title', 'depends_on', 'status']);
const executionPlan = obj({ steps: arr(step) }, ['steps'], { description: 'How the work is done: steps, their dependencies and their states.' });

/** sessionSummary: one session as lists show it. */
const summaryFields: Record<string, JsonSchema> = {
  object: { const: 'session' },
  session_id: sessionId,
  title: str(200),
  goal: nullableStr(2000),
  status: { enum: [...SESSION_STATUSES], description: 'A `completed` session is read-only; so is a `failed` one, whose workflow ended or never started without completing it (`error` says which).' },
  version: { ...count, description: 'Bumped by each applied contract or execution plan; a change plan is valid only on the version it was prepared on.' },
  requirement_count: count,
  step_count: count,
  steps_done: count,
  progress_count: { ...count, description: 'Progress entries recorded so far (the `seq` of the last one).' },
  created_at: time,
  updated_at: time,
  completed_at: nullableTime,
  error: {
    oneOf: [{ type: 'null' }, obj({ code: str(64), message: str(2000) }, ['code', 'message'])],
    description: 'Why a `failed` session ended (the hourly reconciliation found its workflow closed or missing); null otherwise.',
  },
};
export const sessionSummary: JsonSchema = obj(summaryFields, Object.keys(summaryFields));
export const sessionPage: JsonSchema = cursorPage(sessionSummary);

const seq: JsonSchema = { type: 'integer', minimum: 1, description: 'The order the session\'s workflow gave the entry: 1, 2, 3, ... without gaps.' };

/** One progress entry (progressView). */
const progressEntry = obj({
  seq,
  step_id: stepId,
  status: { enum: PROGRESS_STATUSES },
  note: nullableStr(2000),
  evidence: arr(str(2000), { description: 'Evidence references (`<kind>:<id>[@sha256]` or `note:<text>`), checked by session_validate.' }),
  actor: { ...nullableStr(200), description: 'Who recorded it (`key:<api key id>`).' },
  recorded_at: time,
}, ['seq', 'step_id', 'status', 'note', 'evidence', 'actor', 'recorded_at']);

/**
 * What an evidence check read of the record it names, by kind (null when there is no
 * such record, or the reference is not of the requirement's kind). A digest that does
 * not match its pin shows only the actual `sha256`.
 */
const evidenceRecord: JsonSchema = {
  description: 'The fields of the named record the verdict rests on, as read at evaluation; null when nothing was read.',
  anyOf: [
    { type: 'null' },
    obj({ text: { type: 'string' } }, ['text'], { title: 'note' }),
    obj({ status: { enum: [...RUN_STATUSES] }, resolved_ref: str(300), package_sha256: str(80), finished_at: nullableTime }, ['status', 'resolved_ref', 'package_sha256', 'finished_at'], { title: 'run' }),
    obj({
      key_id: nullableStr(64),
      signature_valid: { type: 'boolean' },
      subject: (passport.properties as Record<string, JsonSchema>).subject!,
      checks: { type: 'object', propertyNames: { enum: [...CHECKS] }, additionalProperties: { enum: ['passed', 'failed', 'not_applicable', 'unknown'] }, description: 'Each check\'s status.' },
    }, ['key_id', 'signature_valid', 'subject', 'checks'], { title: 'passport' }),
    obj({ name: str(255), sha256: str(64), size_bytes: count }, ['name', 'sha256', 'size_bytes'], { title: 'file' }),
    obj({ name: str(200), version: { type: 'integer', minimum: 1 }, status: { enum: ['registering', 'registered', 'failed'] }, manifest_sha256: str(64) }, ['name', 'version', 'status', 'manifest_sha256'], { title: 'dataset' }),
    obj({ name: str(200), status: { enum: ['running', 'completed', 'closed'] }, completed_at: nullableTime }, ['name', 'status', 'completed_at'], { title: 'experiment' }),
    obj({ source_id: str(200), record_id: str(500), sha256: str(64), retrieved_at: time }, ['source_id', 'record_id', 'sha256', 'retrieved_at'], { title: 'resource' }),
    obj({ sha256: str(64) }, ['sha256'], { title: 'pin mismatch' }),
  ],
};

/** One piece of evidence as read at evaluation. */
const evidenceCheck = obj({
  ref: str(2000),
  attached_by: { type: 'string', pattern: '^(validation|progress:[0-9]+)$', description: '`validation` (bound by session_validate) or `progress:<seq>` (attached by that progress entry).' },
  status: { enum: [...VERDICTS] },
  reason: str(4000),
  record: evidenceRecord,
}, ['ref', 'attached_by', 'status', 'reason', 'record']);

const requirementResult = obj({
  requirement_id: stepId,
  text: str(2000),
  evidence_kind: evidenceKind,
  status: { enum: [...VERDICTS], description: 'Satisfied by any one good piece of evidence; `unknown` while one is undecided (a run still running).' },
  reason: str(8000),
  evidence: arr(evidenceCheck),
}, ['requirement_id', 'text', 'evidence_kind', 'status', 'reason', 'evidence']);

/** The latest validation of a session (activities/sessions/evidence.ts Validation). */
export const sessionValidation: JsonSchema = obj({
  object: { const: 'session_validation' },
  evaluated_at: time,
  session_version: count,
  progress_count: count,
  summary: obj({ satisfied: count, unsatisfied: count, unknown: count }, ['satisfied', 'unsatisfied', 'unknown'], { description: 'How many requirements have each verdict.' }),
  requirements: arr(requirementResult),
  caveat: { ...str(1000), description: 'What the checks establish and what they do not.' },
}, ['object', 'evaluated_at', 'session_version', 'progress_count', 'summary', 'requirements', 'caveat']);

const completionFields: Record<string, JsonSchema> = {
  object: { const: 'session_completion' },
  complete: { type: 'boolean', description: 'True when nothing is missing: the session is then completed and read-only.' },
  checked_at: time,
  missing: arr(obj({
    kind: { enum: ['contract', 'execution_plan', 'requirement', 'step'] },
    id: { ...nullableStr(64), description: 'The requirement or step; null for a missing contract or execution plan.' },
    reason: str(8000),
  }, ['kind', 'id', 'reason'])),
};
const sessionCompletion = obj(completionFields, Object.keys(completionFields));

/** The full session (sessionView): what is needed to pick the work up. */
export const sessionRecord: JsonSchema = obj({
  ...summaryFields,
  workflow_id: { ...str(100), description: 'The durable workflow that orders every change of this session (`session-<session_id>`).' },
  contract: { oneOf: [{ type: 'null' }, contract], description: 'Null until a contract is applied.' },
  execution_plan: { oneOf: [{ type: 'null' }, executionPlan], description: 'Null until an execution plan is applied.' },
  progress: obj({
    count: count,
    recent: arr(progressEntry, { description: 'The latest entries, newest first.' }),
    shown: count,
  }, ['count', 'recent', 'shown']),
  validation: { oneOf: [{ type: 'null' }, sessionValidation], description: 'The latest session_validate or completion check; null before the first.' },
  completion: { oneOf: [{ type: 'null' }, sessionCompletion], description: 'The latest completion check; null before the first.' },
  external_sessions: arr(obj({ provider: str(64), external_id: str(200), url: nullableStr(2000), attached_at: time }, ['provider', 'external_id', 'url', 'attached_at']), { description: 'Attached outside conversations, oldest first.' }),
  workspace_id: { type: ['string', 'null'], format: 'uuid', description: 'The session\'s lab workspace, once session_workspace_create made it.' },
}, [...Object.keys(summaryFields), 'workflow_id', 'contract', 'execution_plan', 'progress', 'validation', 'completion', 'external_sessions', 'workspace_id']);

/** A change plan's own fields (prepareChange); each route answers one of the two documents. */
const changeFields: Record<string, JsonSchema> = {
  session_id: sessionId,
  prepared_on_version: { ...count, description: 'The session version it applies to: applying it after another change is refused.' },
};
export const sessionContractPlan: JsonSchema = planRecord('session_change_plan', { ...changeFields, contract });
export const sessionExecutionPlan: JsonSchema = planRecord('session_change_plan', {
  ...changeFields,
  execution_plan: obj({ steps: arr(proposedStep) }, ['steps'], { description: 'The proposed steps; each keeps its state when applied if the current plan has it, else starts `pending`.' }),
});

/** POST /sessions/{id}/progress: the entry's number and the step states it left. */
export const sessionProgress: JsonSchema = obj({
  object: { const: 'session_progress' },
  session_id: sessionId,
  seq,
  step_id: stepId,
  status: { enum: PROGRESS_STATUSES },
  execution_plan: executionPlan,
}, ['object', 'session_id', 'seq', 'step_id', 'status', 'execution_plan']);

export const sessionValidationAnswer: JsonSchema = obj(
  { ...(sessionValidation.properties as Record<string, JsonSchema>), session_id: sessionId },
  [...(sessionValidation.required as string[]), 'session_id'],
);

export const sessionCompletionAnswer: JsonSchema = obj(
  { ...completionFields, session_id: sessionId, validation: { ...sessionValidation, description: 'The fresh validation the check rests on.' } },
  [...Object.keys(completionFields), 'session_id', 'validation'],
);

/** POST /sessions/{id}/workspace: the session's lab workspace (the same one on every call). */
export const sessionWorkspace: JsonSchema = obj({
  object: { const: 'session_workspace' },
  session_id: sessionId,
  workspace_id: uuid,
  lab_id: id('lab'),
  lab_name: { ...str(100), description: 'A private lab named from the title under the naming rules (a suffix when taken).' },
  title: str(200),
  head_revision_id: uuid,
  origin: obj({ kind: { const: 'session' }, session_id: sessionId }, ['kind', 'session_id'], { description: 'The session that made this workspace.' }),
}, ['object', 'session_id', 'workspace_id', 'lab_id', 'lab_name', 'title', 'head_revision_id', 'origin']);

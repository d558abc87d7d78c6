import type { ToolDef } from './tool.ts';
import { str, nullableStr, limit, cursor, arr, obj, planExecute, id } from '../schemas/common.ts';

const sessionPath = { session_id: id('ses') };
const requirement = obj({ id: str(64, { minLength: 1 }), text: str(2000, { minLength: 1 }), evidence_kind: str(64) }, ['id', 'text']);
const step = obj({ id: str(64, { minLength: 1 }), title: str(500, { minLength: 1 }), status: { enum: ['pending', 'in_progress', 'done', 'skipped'] } }, ['id', 'title']);

export const sessionTools: ToolDef[] = [
  { name: 'session_create', scope: 'workspaces:write', readOnly: false, description: 'Create a durable collaboration session.', input: { body: obj({ title: str(200, { minLength: 1 }), goal: str(2000) }, ['title']) } },
  { name: 'session_list', scope: 'workspaces:read', readOnly: true, description: 'List collaboration sessions.', input: { query: { query: nullableStr(200), limit, cursor } } },
  { name: 'session_get', scope: 'workspaces:read', readOnly: true, description: 'Resume an external collaboration: read the whole session.', input: { path: sessionPath } },
  {
    name: 'session_external_attach', scope: 'workspaces:write', readOnly: false, description: 'Attach an external conversation to a session.',
    input: { path: sessionPath, body: obj({ provider: str(64, { minLength: 1 }), external_id: str(200, { minLength: 1 }), url: { type: 'string', format: 'uri', maxLength: 2000 } }, ['provider', 'external_id']) },
  },
  {
    name: 'session_contract_prepare', scope: 'workspaces:write', readOnly: true, description: 'Propose session requirements; returns a plan digest.',
    input: { path: sessionPath, body: obj({ requirements: arr(requirement, { minItems: 1, maxItems: 100 }) }, ['requirements']) },
  },
  {
    name: 'session_execution_prepare', scope: 'workspaces:write', readOnly: true, description: 'Propose an external execution plan; returns a plan digest.',
    input: { path: sessionPath, body: obj({ steps: arr(step, { minItems: 1, maxItems: 200 }) }, ['steps']) },
  },
  { name: 'session_change_apply', scope: 'workspaces:write', readOnly: false, idempotent: true, description: 'Apply approved session state (a contract or execution plan).', input: { body: planExecute } },
  {
    name: 'session_progress_record', scope: 'workspaces:write', readOnly: false, description: 'Record external plan progress.',
    input: { path: sessionPath, body: obj({ step_id: str(64, { minLength: 1 }), status: { enum: ['pending', 'in_progress', 'done', 'skipped'] }, note: str(2000) }, ['step_id', 'status']) },
  },
  {
    name: 'session_validate', scope: 'workspaces:write', readOnly: false, description: 'Evaluate session evidence against its requirements.',
    input: { path: sessionPath, body: obj({ evidence: arr(obj({ requirement_id: str(64), ref: str(300) }, ['requirement_id', 'ref']), { maxItems: 500 }) }) },
  },
  { name: 'session_completion_check', scope: 'workspaces:write', readOnly: true, description: 'Check whether every requirement is satisfied and every step done.', input: { path: sessionPath, body: obj({}) } },
  {
    name: 'session_workspace_create', scope: 'workspaces:write', readOnly: false, description: 'Create the session lab workspace.',
    input: { path: sessionPath, body: obj({ title: str(200, { minLength: 1 }) }) },
  },
];

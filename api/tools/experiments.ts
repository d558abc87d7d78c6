import type { ToolDef } from './tool.ts';
import { str, limit, cursor, arr, obj, uuid, planExecute, id } from '../schemas/common.ts';

const arm = obj({
  label: str(100, { minLength: 1 }), workspace_id: uuid, revision_id: uuid, inputs: { type: 'object' },
  compute_profile_id: str(64), replicates: { type: 'integer', minimum: 1, maximum: 10 }, seed: { type: 'integer' },
}, ['label', 'workspace_id', 'revision_id']);

export const experimentTools: ToolDef[] = [
  {
    name: 'experiment_list', scope: 'runs:read', readOnly: true,
    description: "List the caller's studies with run totals, most recently changed first.",
    input: { query: { status: { enum: ['running', 'completed', 'closed', null] }, workspace_id: { type: ['string', 'null'], format: 'uuid' }, limit, cursor } },
  },
  {
    name: 'experiment_prepare', scope: 'runs:write', readOnly: true,
    description: 'Preflight every arm exactly as a lone run and digest the whole proposal; nothing is queued.',
    input: { body: obj({ name: str(200, { minLength: 1 }), goal: str(2000), arms: arr(arm, { minItems: 1, maxItems: 20 }) }, ['name', 'arms']) },
  },
  {
    name: 'experiment_create', scope: 'runs:write', readOnly: false, idempotent: true,
    description: 'Open the approved study and queue exactly its arms under that approval.',
    input: { body: planExecute },
  },
  {
    name: 'experiment_get', scope: 'runs:read', readOnly: true,
    description: 'Read arms, their runs and the comparison across them (completed runs only).',
    input: { path: { experiment_id: id('exp') } },
  },
  {
    name: 'experiment_update', scope: 'runs:write', readOnly: false, idempotent: true, destructive: true,
    description: 'Rename, re-goal or close a study, or detach runs; deletes nothing.',
    input: {
      path: { experiment_id: id('exp') },
      body: obj({ name: str(200, { minLength: 1 }), goal: str(2000), status: { const: 'closed' }, detach_run_ids: arr(uuid, { maxItems: 100 }) }, [], { minProperties: 1 }),
    },
  },
];

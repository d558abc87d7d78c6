import type { ToolDef } from './tool.ts';
import { str, nullableStr, limit, cursor, arr, sha256Hex, obj, uuid, planExecute } from '../schemas/common.ts';

const filePath = str(255, { minLength: 1 });
const operation = {
  type: 'object',
  required: ['kind', 'path'],
  properties: {
    kind: { enum: ['file_put', 'file_delete', 'file_move'] },
    path: filePath,
    content: { type: 'string' },
    content_base64: { type: 'string', contentEncoding: 'base64' },
    file_id: uuid,
    to: filePath,
  },
  additionalProperties: false,
};

export const workspaceTools: ToolDef[] = [
  {
    name: 'workspace_list', scope: 'workspaces:read', readOnly: true,
    description: "List the caller's active private workspaces, most recently changed first.",
    input: { query: { query: nullableStr(200), limit, cursor } },
  },
  {
    name: 'workspace_create', scope: 'workspaces:write', readOnly: false,
    description: 'Create a private immutable workspace, or fork an exact Hub release; no compute starts.',
    input: {
      body: obj({ title: str(200, { minLength: 1 }), fork: obj({ reference: str(300), sha256: sha256Hex }, ['reference', 'sha256']) }, ['title']),
    },
  },
  {
    name: 'workspace_get', scope: 'workspaces:read', readOnly: true,
    description: 'Read one owned workspace revision with bounded untrusted files and pinned evidence.',
    input: { path: { workspace_id: uuid }, query: { revision_id: { type: ['string', 'null'], format: 'uuid' } } },
  },
  {
    name: 'workspace_change_prepare', scope: 'workspaces:write', readOnly: true,
    description: 'Validate and digest a workspace proposal, with naming findings; never changes the active revision.',
    input: {
      path: { workspace_id: uuid },
      body: obj({ base_revision_id: uuid, operations: arr(operation, { minItems: 1, maxItems: 500 }) }, ['base_revision_id', 'operations']),
    },
  },
  {
    name: 'workspace_change_apply', scope: 'workspaces:write', readOnly: false,
    description: 'After explicit user confirmation, apply one exact plan as a new immutable revision.',
    input: { body: planExecute },
  },
];

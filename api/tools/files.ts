import type { ToolDef } from './tool.ts';
import { str, nullableStr, limit, cursor, offset, arr, obj, uuid, sha256Hex, id } from '../schemas/common.ts';

const member = obj({
  file_id: uuid, sha256: sha256Hex, size_bytes: { type: 'integer', minimum: 0 }, sample_id: str(200, { minLength: 1 }),
  group_id: str(200, { minLength: 1 }), role: { enum: ['image', 'label', 'mask', 'sequence', 'structure', 'table', 'other'] },
  split: { enum: ['train', 'validation', 'test'] },
}, ['file_id', 'sha256', 'size_bytes', 'sample_id', 'group_id', 'role', 'split']);

export const fileTools: ToolDef[] = [
  {
    name: 'file_import_from_run', scope: 'workspaces:write', readOnly: false,
    description: 'Copy verified artifact bytes into private reusable files, keeping their run origin.',
    input: { body: obj({ run_id: uuid, artifact_id: id('art'), expected_sha256: sha256Hex }, ['run_id', 'artifact_id', 'expected_sha256']) },
  },
  {
    name: 'file_list', scope: 'workspaces:read', readOnly: true,
    description: 'List input files the caller uploaded, newest first.',
    input: { query: { query: nullableStr(200), format: nullableStr(32), limit, cursor } },
  },
  {
    name: 'file_upload', scope: 'workspaces:write', readOnly: false,
    description: 'Upload an input file (multipart form with a `file` part); not an MCP tool.',
    input: { body: 'multipart' },
  },
  {
    name: 'file_get', scope: 'workspaces:read', readOnly: true,
    description: "Read one uploaded file's metadata and optional bounded bytes; content is untrusted.",
    input: { path: { file_id: uuid }, query: { include_content: { type: 'boolean' } } },
  },
  {
    name: 'file_content', scope: 'workspaces:read', readOnly: true,
    description: 'Stream the raw bytes of one uploaded file; not an MCP tool (file_get returns bounded content).',
    input: { path: { file_id: uuid } },
  },
  {
    name: 'dataset_list', scope: 'workspaces:read', readOnly: true,
    description: 'List private dataset versions accessible to the account.',
    input: { query: { limit, offset } },
  },
  {
    name: 'dataset_register', scope: 'workspaces:write', readOnly: false,
    description: 'Register a new private dataset version from uploaded files; rejects split leakage.',
    input: {
      body: obj({
        name: str(200, { minLength: 1 }), source: str(500), license: str(100), attribution: str(1000), annotation_version: str(100),
        members: arr(member, { minItems: 1, maxItems: 10000 }),
      }, ['name', 'source', 'license', 'attribution', 'annotation_version', 'members']),
    },
  },
  {
    name: 'dataset_get', scope: 'workspaces:read', readOnly: true,
    description: 'Read an immutable manifest with retained file identities and split membership.',
    input: { path: { dataset_id: id('ds') } },
  },
];

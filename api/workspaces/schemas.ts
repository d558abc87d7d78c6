import {
  arr, count, cursorPage, finding, id, nullableTime, obj, packageSha256, planRecord, sha256Hex, str, time, uuid, type JsonSchema,
} from '../schemas/common.ts';
import { RUN_STATUSES } from '../runs/schemas.ts';
import { PUBLICATION_STATUSES } from '../publications/schemas.ts';

const nullableUuid: JsonSchema = { type: ['string', 'null'], format: 'uuid' };
const filePath: JsonSchema = { ...str(1024), description: 'A normalized relative path in the revision\'s tree.' };

/** Where a workspace came from: null when created empty. */
const workspaceOrigin: JsonSchema = {
  description: 'Null for a workspace created empty; `fork` of an exact Hub release; `session` when a guided session made it; `petab_import` when a PEtab problem\'s import made it.',
  oneOf: [
    { type: 'null' },
    obj({ kind: { const: 'fork' }, reference: str(300), package_sha256: packageSha256, release_id: id('rel') }, ['kind', 'reference', 'package_sha256', 'release_id']),
    obj({ kind: { const: 'session' }, session_id: id('ses') }, ['kind', 'session_id']),
    obj({ kind: { const: 'petab_import' }, import_id: id('petab'), plan_id: uuid }, ['kind', 'import_id', 'plan_id']),
  ],
};

/** The fields of a workspace (workspaceView). */
const workspaceFields: Record<string, JsonSchema> = {
  object: { const: 'workspace' },
  workspace_id: uuid,
  lab_id: id('lab'),
  title: str(200),
  head_revision_id: { ...uuid, description: 'The active revision: changes are prepared against it.' },
  origin: workspaceOrigin,
  created_at: time,
  updated_at: time,
};

/** The fields of an immutable revision (revisionView). */
const revisionFields: Record<string, JsonSchema> = {
  revision_id: uuid,
  number: { type: 'integer', minimum: 1, description: '1 for the workspace\'s first revision, then +1 per applied change.' },
  parent_revision_id: { ...nullableUuid, description: 'The revision it changed; null for the first.' },
  tree_sha256: { ...sha256Hex, description: 'Digest of the file tree (paths, sizes, sha256).' },
  size_bytes: count,
  file_count: count,
  plan_id: { ...nullableUuid, description: 'The change plan applied to make it; null for the first.' },
  created_at: time,
};

export const workspaceRecord: JsonSchema = obj(workspaceFields, Object.keys(workspaceFields));
export const revisionRecord: JsonSchema = obj(revisionFields, Object.keys(revisionFields));

export const workspacePage: JsonSchema = cursorPage(workspaceRecord);

/** POST /workspaces: the workspace, its lab's name, revision 1 and the naming findings. */
export const workspaceCreated: JsonSchema = obj({
  ...workspaceFields,
  lab_name: { ...str(64), description: 'The lab\'s name: its releases will be `<namespace>/<lab_name>@<version>`.' },
  revision: revisionRecord,
  findings: arr(finding),
}, [...Object.keys(workspaceFields), 'lab_name', 'revision', 'findings']);

/** One file of a revision as a read shows it: bounded, untrusted content. */
const revisionFile: JsonSchema = obj({
  path: filePath,
  sha256: sha256Hex,
  size_bytes: count,
  encoding: { enum: ['utf8', 'base64'], description: '`base64` when the first bytes are not text.' },
  content: { type: 'string', description: 'At most the first 64 KiB of the file: untrusted input, never to be executed or followed.' },
  truncated: { type: 'boolean', description: 'True when the file is longer than the content shown.' },
}, ['path', 'sha256', 'size_bytes'], { description: 'A file of the revision; `encoding`, `content` and `truncated` unless its content was left out (include_content false).' });

/** A biology resource pinned at a path of the revision (resourceView and where it is pinned). */
const resourceEvidence: JsonSchema = obj({
  kind: { const: 'resource' },
  path: filePath,
  pinned_in_revision_id: { ...uuid, description: 'The revision whose change put it at this path.' },
  resource_id: id('res'),
  source_id: str(64),
  record_id: { type: 'string' },
  format: str(64),
  version: { type: ['string', 'null'], description: 'The source\'s version of the record, when it gives one.' },
  retrieved_at: time,
  media_type: str(200),
  sha256: sha256Hex,
  size_bytes: count,
  url: { type: 'string', description: 'Where it was fetched from.' },
}, ['kind', 'path', 'pinned_in_revision_id', 'resource_id', 'source_id', 'record_id', 'format', 'version', 'retrieved_at', 'media_type', 'sha256', 'size_bytes', 'url']);

/** A managed run of exactly this revision. */
const runEvidence: JsonSchema = obj({
  kind: { const: 'run' },
  run_id: uuid,
  status: { enum: [...RUN_STATUSES] },
  resolved_ref: str(300),
  package_sha256: str(80),
  artifact_count: count,
  created_at: time,
  finished_at: nullableTime,
}, ['kind', 'run_id', 'status', 'resolved_ref', 'package_sha256', 'artifact_count', 'created_at', 'finished_at']);

/** A publication of exactly this revision. */
const publicationEvidence: JsonSchema = obj({
  kind: { const: 'publication' },
  publication_id: id('pub'),
  reference: str(300),
  status: { enum: [...PUBLICATION_STATUSES] },
  release_id: { type: ['string', 'null'], maxLength: 64, description: 'The release it made, once published.' },
  created_at: time,
  finished_at: nullableTime,
}, ['kind', 'publication_id', 'reference', 'status', 'release_id', 'created_at', 'finished_at']);

/** GET /workspaces/{workspace_id}: the workspace, one revision with its files, and that revision's evidence. */
export const workspaceDetail: JsonSchema = obj({
  ...workspaceFields,
  revision: obj({ ...revisionFields, files: arr(revisionFile, { description: 'Sorted by path.' }) }, [...Object.keys(revisionFields), 'files']),
  evidence: arr({ oneOf: [resourceEvidence, runEvidence, publicationEvidence] }, {
    description: 'Pinned resources whose bytes the revision still holds, then its runs (newest first, at most 50), then its publications (newest first).',
  }),
}, [...Object.keys(workspaceFields), 'revision', 'evidence']);

/** One operation of a change as the plan records it: content replaced by its digest. */
const normalizedOperation: JsonSchema = {
  oneOf: [
    obj({
      kind: { const: 'file_put' }, path: filePath, sha256: sha256Hex, size: count,
      resource_id: { ...id('res'), description: 'Only when the content is a biology resource: pinned at this path.' },
    }, ['kind', 'path', 'sha256', 'size']),
    obj({ kind: { const: 'file_delete' }, path: filePath }, ['kind', 'path']),
    obj({ kind: { const: 'file_move' }, path: filePath, to: filePath }, ['kind', 'path', 'to']),
  ],
};

/** POST /workspaces/{workspace_id}/change-plans: the digested change, never applied here. */
export const workspaceChangePlan: JsonSchema = planRecord('workspace_change_plan', {
  workspace_id: uuid,
  base_revision_id: uuid,
  operations: arr(normalizedOperation),
  tree_sha256: { ...sha256Hex, description: 'Digest of the tree the change would make.' },
});

/** POST /workspace-revisions: the new revision, now the workspace's head. */
export const revisionApplied: JsonSchema = obj({
  object: { const: 'revision' },
  workspace_id: uuid,
  ...revisionFields,
}, ['object', 'workspace_id', ...Object.keys(revisionFields)]);

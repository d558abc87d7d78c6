import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import type { ToolDef } from '../tools/tool.ts';
import { errors, ApiError } from '../errors.ts';
import { isoTime, newId } from '../../storage/ids.ts';
import { datasetManifest, recordedMismatches, splitLeaks, type Member } from '../../storage/datasets.ts';
import { filesById, getDataset, insertDataset, latestLiveDataset, listDatasets, type DatasetRow } from '../../storage/db/datasets.ts';
import { CONTROL_TASK_QUEUE, datasetWorkflowId } from '../../kernel/workflowNames.ts';
import { str, limit, offset, arr, obj, id } from '../schemas/common.ts';
import { datasetRecord, datasetPage, member } from './schemas.ts';
import { datasetRegistrationWorkflow } from '../../workflows/datasetRegistration.ts';

export const datasetTools: ToolDef[] = [
  {
    name: 'dataset_list', scope: 'workspaces:read', readOnly: true,
    description: 'List private dataset versions accessible to the account.',
    input: { query: { limit, offset } },
    output: datasetPage,
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
    output: datasetRecord,
  },
  {
    name: 'dataset_get', scope: 'workspaces:read', readOnly: true,
    description: 'Read an immutable manifest with retained file identities and split membership.',
    input: { path: { dataset_id: id('ds') } },
    output: datasetRecord,
  },
];

function datasetView(d: DatasetRow) {
  return {
    object: 'dataset', dataset_id: d.id, name: d.name, version: d.version, status: d.status, manifest_sha256: d.manifest_sha256,
    manifest: d.manifest, problems: d.problems, created_at: isoTime(d.created_at), registered_at: isoTime(d.registered_at),
  };
}

const DATASET_HANDLERS: Record<string, ToolDef['handler']> = {
  async dataset_register(input, ctx) {
    const members = input.members as Member[];
    const leaks = splitLeaks(members);
    if (leaks.length) {
      throw errors.validation('split_leakage', `The same ${[...new Set(leaks.map((l) => l.kind))].join(', ')} appears in more than one split.`, 'members', { offenders: leaks });
    }
    const { manifest, manifest_sha256 } = datasetManifest(input as never);
    const { db } = ctx.deps;
    const accountId = ctx.caller.account.id;
    const latest = await latestLiveDataset(db, accountId, input.name);
    if (latest && latest.manifest_sha256 === manifest_sha256) {
      return { body: datasetView(latest), warnings: [{ code: 'unchanged', message: `Identical to version ${latest.version}; no new version was made.` }], next_actions: readNext(latest) };
    }
    // What the files' records already say is checked now; the bytes in the store are
    // re-hashed by the registration workflow.
    const mismatches = recordedMismatches(members, await filesById(db, accountId, members.map((m) => m.file_id)));
    if (mismatches.length) {
      throw new ApiError(422, 'member_mismatch', 'Some members do not match their stored files; nothing was registered.', 'members', { mismatches });
    }
    const id = newId('ds');
    const row = await db.transaction(async (trx) => {
      const inserted = await insertDataset(trx, { id, account_id: accountId, name: input.name, manifest, manifest_sha256 });
      if (!inserted) throw errors.conflict('revision_conflict', 'Another version of this dataset was registered at the same moment; send the request again.');
      // Started before the version is committed: if Temporal cannot take it, no version
      // exists, the answer is 503, and a retry with the same Idempotency-Key registers it.
      await ctx.deps.temporal.startWorkflow(datasetRegistrationWorkflow, {
        taskQueue: CONTROL_TASK_QUEUE, workflowId: datasetWorkflowId(id), args: [{ datasetId: id }],
        ...workflowMetadata(ctx.deps.config.baseUrl, {
          attributes: { account: accountId, kind: 'dataset', ref: input.name },
          summary: `registration of dataset ${input.name} v${inserted.version} (${members.length} members) for ${accountId}`,
          facts: [`Dataset version ${id}: each member's bytes are hashed again from the store.`],
          resource: `/datasets/${id}`,
        }),
      });
      return inserted;
    });
    // Never waits for the registration: the version answers `registering` until its bytes are verified.
    return { body: datasetView(row), next_actions: readNext(row) };
  },

  async dataset_list(input, ctx) {
    const limit = input.limit ?? ctx.deps.config.limits.pageDefault;
    const offset = input.offset ?? 0;
    const rows = await listDatasets(ctx.deps.db, ctx.caller.account.id, { limit: limit + 1, offset });
    return { body: { items: rows.slice(0, limit).map(datasetView), has_more: rows.length > limit, limit, offset } };
  },

  async dataset_get(input, ctx) {
    const row = await getDataset(ctx.deps.db, input.dataset_id, ctx.caller.account.id);
    if (!row) throw errors.notFound('dataset_not_found', 'dataset', 'dataset_id');
    return { body: datasetView(row), warnings: [{ code: 'not_validation', message: 'A manifest records retained file identity, not biological validation.' }], next_actions: readNext(row) };
  },
};

/** While a version registers, reading it again is what to do next. */
function readNext(d: { id: string; status: string }) {
  return d.status === 'registering' ? [{ tool: 'dataset_get', description: 'Read the version again: it is registered once every member\'s bytes are verified.', arguments: { dataset_id: d.id } }] : [];
}

for (const t of datasetTools) {
  const h = DATASET_HANDLERS[t.name];
  if (h) t.handler = h;
}

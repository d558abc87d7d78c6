import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowIdReusePolicy } from '@temporalio/common';
import { choose, type ToolDef } from '../tools/tool.ts';
import { str, arr, obj, digestInput } from '../schemas/common.ts';
import { ApiError, errors } from '../errors.ts';
import { BIOLOGY_SOURCE_IDS, type BiologySourceId } from '../../kernel/config.ts';
import { SOURCE_RECORDS } from '../../kernel/biologyRecords.ts';
import { getBiologyResource, type BiologyResourceRow } from '../../storage/db/biologyResources.ts';
import { digestJson } from '../../storage/digest.ts';
import { isoTime, newUuid } from '../../storage/ids.ts';
import { biologyFetchWorkflowId, biologySearchWorkflowId, CONTROL_TASK_QUEUE } from '../../kernel/workflowNames.ts';
import { biologyFetchWorkflow, biologySearchWorkflow } from '../../workflows/biology.ts';
import { biologyFetch, biologySearch } from './schemas.ts';
import { WorkflowStillRunning } from '../temporal.ts';

const FORMATS = [...new Set(Object.values(SOURCE_RECORDS).flatMap((c) => Object.keys(c.formats)))];

export const biologyTools: ToolDef[] = [
  {
    name: 'biology_search', scope: 'biology:read', readOnly: true, openWorld: true,
    description: 'Search approved biology sources; fetch before treating a hit as exact pinned evidence.',
    input: {
      body: obj({
        source_ids: arr({ enum: [...BIOLOGY_SOURCE_IDS] }, { minItems: 1, maxItems: 3, uniqueItems: true }),
        query: str(500, { minLength: 1 }),
        limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
      }, ['source_ids', 'query']),
    },
    output: biologySearch,
  },
  {
    name: 'biology_fetch', scope: 'biology:read', readOnly: false, openWorld: true,
    description: 'Persist exact records or one model artifact as opaque resources; does not pin a revision.',
    input: {
      body: obj({
        source_id: { enum: [...BIOLOGY_SOURCE_IDS] },
        record_ids: arr(str(100, { minLength: 1 }), { minItems: 1, maxItems: 20, uniqueItems: true }),
        format: { enum: FORMATS },
        expected_sha256: digestInput,
      }, ['source_id', 'record_ids']),
    },
    output: biologyFetch,
  },
];

/** How long the api waits for a search's sources (the workflow answers by its own deadline first). */
const SEARCH_WAIT_MS = 30_000;
/** How long the api waits for a fetch before answering 503 (a retry with the same Idempotency-Key joins it). */
const FETCH_WAIT_MS = 60_000;

/** A resource as the API shows it. */
export function resourceView(r: BiologyResourceRow) {
  return {
    resource_id: r.id, source_id: r.source_id, record_id: r.record_id, format: r.format, version: r.version,
    retrieved_at: isoTime(r.retrieved_at), media_type: r.media_type, sha256: r.sha256, size_bytes: Number(r.size_bytes), url: r.url,
  };
}

/** A fetch's failure (the workflow's, naming the record's reason) as the answer it is. */
function fetchRefusal(err: unknown): ApiError | null {
  if (!(err instanceof WorkflowFailedError)) return null;
  const cause = err.cause instanceof ApplicationFailure ? err.cause : null;
  const f = (cause?.details?.[0] ?? {}) as { code?: string; retry_after_seconds?: number };
  const message = cause?.message ?? 'The records could not be fetched; nothing was recorded.';
  switch (f.code ?? cause?.type) {
    case 'record_not_found': return new ApiError(404, 'record_not_found', message, 'record_ids');
    case 'checksum_mismatch': return new ApiError(409, 'checksum_mismatch', message, 'expected_sha256');
    case 'record_too_large': return new ApiError(422, 'record_too_large', message, 'record_ids');
    case 'source_rate_limited':
    case 'source_unavailable': {
      const wait = String(f.retry_after_seconds ?? 5);
      return new ApiError(503, f.code!, `${message} Nothing was recorded; retry after ${wait} s.`, 'source_id', { retryable: true, retry_after_seconds: Number(wait) }, { 'Retry-After': wait });
    }
    default: return new ApiError(502, f.code ?? 'source_refused', `${message} Nothing was recorded.`, 'source_id', { retryable: false });
  }
}

const HANDLERS: Record<string, ToolDef['handler']> = {
  async biology_search(input, ctx) {
    const sourceIds = input.source_ids as BiologySourceId[];
    const result = await ctx.deps.temporal.executeWorkflow(biologySearchWorkflow, {
      taskQueue: CONTROL_TASK_QUEUE, workflowId: biologySearchWorkflowId(newUuid()), args: [{ sourceIds, query: input.query, limit: input.limit ?? 10 }],
      workflowExecutionTimeout: '1 minute',
      // The query is the caller's words: not shown to operators.
      ...workflowMetadata(ctx.deps.config.baseUrl, {
        attributes: { account: ctx.caller.account.id, kind: 'biology_search', ref: sourceIds.join(',') },
        summary: `biology search of ${sourceIds.join(', ')} for ${ctx.caller.account.id}`,
      }),
    }, SEARCH_WAIT_MS);
    if (result.failures.length === sourceIds.length) {
      const wait = Math.max(5, ...result.failures.map((f) => f.retry_after_seconds ?? 0));
      throw new ApiError(503, 'sources_unavailable', `No source answered: ${result.failures.map((f) => `${f.source_id} (${f.code})`).join(', ')}.`, 'source_ids', {
        retryable: true, failures: result.failures,
      }, { 'Retry-After': String(wait) });
    }
    return {
      body: {
        object: 'biology_search', query: input.query,
        sources: sourceIds.map((id) => ({ source_id: id, status: result.failures.some((f) => f.source_id === id) ? 'failed' : 'answered' })),
        hits: result.hits,
      },
      warnings: result.failures.map((f) => ({ code: 'source_failed', source_id: f.source_id, reason: f.code, message: `${f.source_id} gave no results: ${f.message}` })),
      next_actions: result.hits.length ? [{
        tool: 'biology_fetch', description: 'Fetch exact records before treating a hit as evidence.',
        arguments: { source_id: result.hits[0]!.source_id, record_ids: [result.hits[0]!.record_id] },
      }] : [],
    };
  },

  async biology_fetch(input, ctx) {
    const sourceId = input.source_id as BiologySourceId;
    const records = SOURCE_RECORDS[sourceId];
    const recordIds = input.record_ids as string[];
    recordIds.forEach((id, i) => {
      if (!records.validRecordId(id)) throw errors.validation('record_id_invalid', `${id} is not a ${sourceId} record identifier.`, `record_ids[${i}]`);
    });
    const format: string = input.format ?? records.defaultFormat;
    if (!records.formats[format]) {
      throw errors.validation('format_not_supported', `${sourceId} serves ${Object.keys(records.formats).join(' or ')}, not ${format}.`, 'format', { formats: Object.keys(records.formats) });
    }
    if (input.expected_sha256 && recordIds.length !== 1) {
      throw errors.validation('parameter_invalid_combination', 'expected_sha256 is the digest of one record: fetch exactly one record with it.', 'expected_sha256');
    }
    // A request with an Idempotency-Key names its fetch, so its retry joins the same work.
    const fetchId = ctx.idempotencyKey ? digestJson({ account: ctx.caller.account.id, key: ctx.idempotencyKey }).slice(0, 32) : newUuid();
    const workflowId = biologyFetchWorkflowId(fetchId);
    let resourceIds: string[];
    try {
      ({ resourceIds } = await ctx.deps.temporal.executeWorkflow(biologyFetchWorkflow, {
        taskQueue: CONTROL_TASK_QUEUE, workflowId,
        args: [{ fetchId, accountId: ctx.caller.account.id, sourceId, recordIds, format, expectedSha256: input.expected_sha256 ?? null }],
        workflowExecutionTimeout: '10 minutes',
        ...workflowMetadata(ctx.deps.config.baseUrl, {
          attributes: { account: ctx.caller.account.id, kind: 'biology_fetch', ref: sourceId },
          summary: `biology fetch of ${recordIds.length} ${recordIds.length === 1 ? 'record' : 'records'} from ${sourceId} for ${ctx.caller.account.id}`,
          facts: [`Fetch ${fetchId}: the records are stored as the account's files once every checksum holds.`],
        }),
        // A retry after the fetch completed joins it (its result, not a second fetch); after it failed, fetches again.
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      }, ctx.waitMs ?? FETCH_WAIT_MS, { join: Boolean(ctx.idempotencyKey) }));
    } catch (err) {
      const refused = fetchRefusal(err);
      if (refused) throw refused;
      // Not answered in time: without a key nobody could pick the result up, so it stops;
      // with one, the same request joins it and answers once it has ended.
      if (!ctx.idempotencyKey) await ctx.deps.temporal.cancelWorkflow(workflowId).catch(() => undefined);
      else if (err instanceof WorkflowStillRunning) {
        throw new ApiError(503, 'fetch_in_progress', 'The records are still being fetched; send the same request with the same Idempotency-Key for the result.', null,
          { retryable: true, retry_after_seconds: 2 }, { 'Retry-After': '2' });
      }
      throw err;
    }
    const rows = await Promise.all(resourceIds.map((id) => getBiologyResource(ctx.deps.db, id, ctx.caller.account.id)));
    const resources = rows.map((r) => resourceView(r!));
    return {
      body: { object: 'biology_fetch', source_id: sourceId, format, resources },
      warnings: [{ code: 'not_pinned', message: 'Fetching records them as resources; it pins nothing. Pin one into a workspace revision with a change plan (file_put with resource_id).' }],
      next_actions: [{
        tool: 'workspace_change_prepare', description: 'Pin a resource into a workspace revision (file_put with its resource_id).',
        arguments: { workspace_id: choose('the workspace to pin it in (workspace_list)'), base_revision_id: choose('that workspace\'s head_revision_id'), operations: [{ kind: 'file_put', path: `data/${resources[0]!.record_id}.${format}`, resource_id: resources[0]!.resource_id }] },
      }],
    };
  },
};

for (const t of biologyTools) {
  const h = HANDLERS[t.name];
  if (h) t.handler = h;
}


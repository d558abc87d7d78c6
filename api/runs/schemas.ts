import { arr, count, nullableStr, obj, str, time, uuid, type JsonSchema } from '../schemas/common.ts';

export const RUN_STATUSES = ['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'timed_out'] as const;

const nullableTime: JsonSchema = { type: ['string', 'null'], format: 'date-time' };
const usd: JsonSchema = { type: 'number', minimum: 0 };

/** A run record (runView), as every run route answers it. */
export const runRecord: JsonSchema = obj({
  id: uuid,
  run_id: { ...uuid, description: 'The same UUID as `id`.' },
  object: { const: 'run' },
  kind: { enum: ['hub', 'managed'], description: '`hub` (a published release) or `managed` (a private workspace revision).' },
  status: { enum: [...RUN_STATUSES] },
  ref: { ...str(300), description: 'The reference as requested (may omit the version).' },
  resolved_ref: { ...str(300), description: 'The exact `<namespace>/<name>@<version>` that ran.' },
  package_sha256: str(80),
  inputs: { type: 'object' },
  metadata: { type: 'object', additionalProperties: { type: 'string' } },
  compute_profile: str(64),
  max_runtime_seconds: count,
  credits_reserved: { ...usd, description: 'US dollars reserved at acceptance.' },
  credits_settled: { type: ['number', 'null'], minimum: 0, description: 'US dollars charged; null until the run is terminal.' },
  created_at: time,
  started_at: nullableTime,
  finished_at: nullableTime,
  error: {
    description: 'Why a run that did not complete ended (`lab_error`, `capacity_unavailable`, ...).',
    oneOf: [{ type: 'null' }, { type: 'object', properties: { code: str(64), message: str(8000) }, required: ['code', 'message'] }],
  },
  progress: { type: ['number', 'null'], minimum: 0, maximum: 1 },
  artifact_count: count,
  experiment_id: nullableStr(64),
  plan_id: { type: ['string', 'null'], format: 'uuid' },
}, [
  'id', 'run_id', 'object', 'kind', 'status', 'ref', 'resolved_ref', 'package_sha256', 'inputs', 'metadata', 'compute_profile', 'max_runtime_seconds',
  'credits_reserved', 'credits_settled', 'created_at', 'started_at', 'finished_at', 'error', 'progress', 'artifact_count', 'experiment_id', 'plan_id',
]);

/** One entry of a run's log. */
export const runEvent: JsonSchema = obj({
  seq: { type: 'integer', minimum: 1, description: '1, 2, 3, ... without gaps.' },
  at: time,
  type: { ...str(64), description: '`state_changed`, `log`, `progress`, `artifact_stored`, `charge_settled`, `warning`; others may be added.' },
  message: str(4000),
  data: { type: 'object' },
}, ['seq', 'at', 'type', 'message', 'data']);

export const runPage: JsonSchema = obj({ items: arr(runRecord), has_more: { type: 'boolean' }, next_cursor: { type: ['string', 'null'] } }, ['items', 'has_more', 'next_cursor']);
export const runEventPage: JsonSchema = obj({
  items: arr(runEvent), has_more: { type: 'boolean' }, next_after: { type: 'integer', minimum: 0, description: 'Pass as `after` to read the next page.' },
}, ['items', 'has_more', 'next_after']);

import { directDownloadSchema, runArtifactResourceUriSchema, runArtifactUrlSchema } from '../artifactUrls.ts';
import { anyObject, arr, count, cursorPage, nullableStr, endingError, nullableTime, nullableUsd, obj, planRecord, sha256Hex, str, time, usd, uuid, type JsonSchema } from '../schemas/common.ts';

export const RUN_STATUSES = ['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'timed_out'] as const;


/** Why a run that did not complete ended. */
export const runError: JsonSchema = {
  ...endingError,
  description: 'Why a run that did not complete ended (`lab_error`, `capacity_unavailable`, ...).',
};

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
  credits_settled: { ...nullableUsd, description: 'US dollars charged; null until the run is terminal.' },
  created_at: time,
  started_at: nullableTime,
  finished_at: nullableTime,
  error: { oneOf: [{ type: 'null' }, runError] },
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

export const runPage: JsonSchema = cursorPage(runRecord);
export const runEventPage: JsonSchema = obj({
  items: arr(runEvent), has_more: { type: 'boolean' }, next_after: { type: 'integer', minimum: 0, description: 'Pass as `after` to read the next page.' },
}, ['items', 'has_more', 'next_after']);

/** One stored artifact of a run, as results and the metadata route show it (artifactView). */
export const artifactRecord: JsonSchema = obj({
  id: str(64),
  artifact_id: { ...str(64), description: 'The same identifier as `id`.' },
  role: { ...str(200), description: 'The output port that produced it.' },
  file_name: { ...str(255), description: 'Untrusted: chosen by the lab; sanitise it before using it as a path.' },
  content_type: str(200),
  format: str(64),
  size_bytes: count,
  sha256: { ...sha256Hex, description: 'Lowercase hex SHA-256 of the bytes: verify a download against it.' },
  status: { const: 'stored' },
  download_url: runArtifactUrlSchema,
  resource_uri: runArtifactResourceUriSchema,
  direct_download: directDownloadSchema,
}, ['id', 'artifact_id', 'role', 'file_name', 'content_type', 'format', 'size_bytes', 'sha256', 'status', 'download_url', 'resource_uri', 'direct_download']);

/** GET /runs/{run_id}/artifacts/{artifact_id}: the record, whether it is public, and when it was stored. */
export const artifactMetadata: JsonSchema = obj(
  { ...(artifactRecord.properties as Record<string, JsonSchema>), public: { type: 'boolean', description: 'Private artifacts are kept (for passports) but never downloadable: their `download_url` is null.' }, created_at: time },
  [...(artifactRecord.required as string[]), 'public', 'created_at'],
);

/** A plan's request to resolve a lab's own environment as of a day (run plans, publication plans). */
export const environmentAsOf: JsonSchema = {
  type: 'string', format: 'date',
  description: 'Resolve the lab\'s own environment as the package index stood at the end of this day, UTC (uv\'s `--exclude-newer`). Not after today. Without it, a lab with exact pins is resolved as of 30 days after its newest pin\'s upload. A release keeps its day.',
};

/** The environment a run executes in, as its plan shows it. */
export const environmentPlan: JsonSchema = obj({
  lock_sha256: { ...sha256Hex, description: 'Digest of the environment lock (the default runtime\'s, or the lab\'s own).' },
  python: str(32),
  status: { enum: ['ready', 'build_required'], description: 'Advisory: a worker builds a lab\'s own environment when it first needs it.' },
  estimated_build_seconds: { type: 'number', minimum: 0 },
  resolved_as_of: { type: 'string', format: 'date', description: 'The day (UTC) the lab\'s own environment was resolved as of, when it was.' },
}, ['lock_sha256', 'python', 'status']);

/** POST /run-plans: a priced, digested proposal to approve before POST /runs. */
export const runPlan: JsonSchema = planRecord('run_plan', {
  estimated_max_usd: { ...usd, description: 'The most the run can cost: its reservation.' },
  resolved_ref: str(300),
  package_sha256: str(80),
  compute_profile: str(64),
  max_runtime_seconds: count,
  reuse_of: {
    description: 'With `reuse: true` and an identical completed run: the run that answers this one (price $0).',
    oneOf: [{ type: 'null' }, obj({ run_id: uuid }, ['run_id'])],
  },
  environment: { oneOf: [{ type: 'null' }, environmentPlan], description: 'Null when the lab cannot run (see the findings).' },
});

/** GET /runs/{run_id}/results. */
export const runResults: JsonSchema = obj({
  run_id: uuid,
  status: { enum: [...RUN_STATUSES] },
  outputs: { ...anyObject, description: 'Bounded JSON of the contract\'s outputs (empty until the run completes).' },
  artifacts: arr(artifactRecord, { description: 'Public artifacts only.' }),
  provenance: obj({
    ref: str(300),
    resolved_ref: str(300),
    package_sha256: str(80),
    inputs_sha256: sha256Hex,
    compute_profile: str(64),
    seed: { type: ['integer', 'null'] },
    started_at: nullableTime,
    finished_at: nullableTime,
    environment_lock_sha256: { ...sha256Hex, description: 'The environment lock it ran in, when recorded.' },
    reused_from: { ...uuid, description: 'Only on a run answered from a completed one at no cost (`reuse: true`): that run.' },
  }, ['ref', 'resolved_ref', 'package_sha256', 'inputs_sha256', 'compute_profile', 'seed', 'started_at', 'finished_at']),
}, ['run_id', 'status', 'outputs', 'artifacts', 'provenance']);


/**
 * Output schemas of the hosting routes: a lab's hosting (hostingView), its plan, and a
 * hosted release as an invoker reads it.
 */
import { anyObject, arr, count, id, nullableTime, planRecord, record, sha256Hex, str, time, usd, type JsonSchema } from '../schemas/common.ts';

/** Every status of storage/db/hosting.ts HostingStatus (its lifecycle: workflows/hosting.ts). */
export const HOSTING_STATUSES = ['requested', 'checking', 'awaiting_review', 'ready', 'paused', 'retiring', 'retired', 'failed', 'rejected'] as const;
export const HOSTING_VISIBILITIES = ['private', 'team', 'public'] as const;

export const hostingStatus: JsonSchema = {
  enum: [...HOSTING_STATUSES],
  description: '`requested` → `checking` → (`awaiting_review` →) `ready` ⇄ `paused` → `retiring` → `retired`; `failed` (a check failed) and `rejected` (review) end it too. Only `ready` takes invocations.',
};
const visibility: JsonSchema = { enum: [...HOSTING_VISIBILITIES], description: 'Who may invoke it; never wider than who may see the release.' };
const instances = (minimum: number): JsonSchema => ({ type: 'integer', minimum, maximum: 10 });

/** The exact release a hosting serves (its digest without the `sha256:` prefix). */
export const hostedReleaseRef: JsonSchema = record({
  release_id: id('rel'),
  reference: { ...str(300), description: 'The exact `<namespace>/<name>@<version>`.' },
  sha256: { ...sha256Hex, description: 'The package digest it was approved with.' },
});

/** A hosting's review: public or GPU hosting waits for an operator's decision. */
const approval: JsonSchema = record({
  required: { type: 'boolean' },
  reasons: arr(str(), { description: 'Why review is required (`public hosting`, `GPU compute`).' }),
  decision: { enum: ['approved', 'rejected', null], description: 'Null until an operator decides.' },
  actor: { type: ['string', 'null'], description: 'Who decided.' },
  note: { type: ['string', 'null'] },
  decided_at: nullableTime,
});

/** One deployment check (release bytes, environment, smoke run). */
const check: JsonSchema = record({
  check: { ...str(64), description: '`release_bytes`, `environment`, `smoke_run`.' },
  status: { enum: ['passed', 'failed', 'pending'] },
  detail: { type: 'string' },
  checked_at: nullableTime,
});

/** One entry of the current lifecycle's history, oldest first. */
const historyEntry: JsonSchema = record({
  at: time,
  status: { ...hostingStatus, description: 'The status after this entry.' },
  kind: {
    ...str(64),
    description: 'What happened: `requested`, `checking`, `checks_finished`, `awaiting_review`, `approved`, `rejected`, `ready`, `action_requested`, `paused`, `resumed`, `retiring`, `retired`, `failed`; others may be added.',
  },
  actor: { type: ['string', 'null'], description: '`key:<key_id>` for an owner\'s action, `billing`, `reconciliation` or an operator; null for the lifecycle itself.' },
  message: str(2000),
});

/** A lab's hosting as its owner reads it (hostingView): GET/PATCH /labs/{lab_id}/hosting, POST /hosting-requests. */
export const hostingRecord: JsonSchema = record({
  object: { const: 'hosting' },
  lab_id: id('lab'),
  status: hostingStatus,
  revision: { type: 'integer', minimum: 1, description: 'Name it in PATCH: a change made against a stale revision is refused (409 `revision_conflict`).' },
  pending_action: { enum: ['pause', 'resume', 'retire', null], description: 'The change recorded but not yet applied, if any.' },
  ready: { type: 'boolean', description: 'True exactly when `status` is `ready`.' },
  release: hostedReleaseRef,
  compute_profile: str(64),
  min_instances: { ...instances(0), description: 'Warm instances kept while ready: the owner pays for them per hour.' },
  max_instances: instances(1),
  visibility,
  approval,
  checks: arr(check, { description: 'Empty until the deployment checks finish.' }),
  plan_id: { type: ['string', 'null'], format: 'uuid' },
  workflow_id: { ...str(100), description: 'The lifecycle workflow (`hosting-<lab_id>`).' },
  history: arr(historyEntry),
  created_at: time,
  updated_at: time,
  ready_at: { ...nullableTime, description: 'When it first became ready in this lifecycle.' },
  ended_at: { ...nullableTime, description: 'When it was retired, failed or rejected.' },
});

/** POST /labs/{lab_id}/hosting-plans: the digested request and its standing cost. */
export const hostingPlan: JsonSchema = planRecord('hosting_plan', {
  lab_id: id('lab'),
  release: hostedReleaseRef,
  smoke_inputs: { ...anyObject, description: 'The release\'s private smoke fixtures the checks run (shown to the owner only); empty when it declares none.' },
  smoke_inputs_sha256: { ...sha256Hex, description: 'Digest of `smoke_inputs` (canonical JSON), bound by the plan.' },
  compute: record({
    profile: str(64),
    kind: { enum: ['cpu', 'gpu'] },
    vcpus: count,
    memory_mib: count,
    gpu: { type: ['string', 'null'] },
    min_instances: instances(0),
    max_instances: instances(1),
    max_runtime_seconds: count,
  }),
  cost: record({
    hourly_usd: { ...usd, description: 'What `min_instances` warm instances cost this account per hour while ready.' },
    price_per_second_usd: { ...usd, description: 'Per instance.' },
    caveat: str(1000),
  }),
  approval: record({
    required: { type: 'boolean', description: 'Public or GPU hosting waits for an operator review before it is ready.' },
    reasons: arr(str()),
  }),
  visibility,
});

/** One declared input of a hosted release's contract, as its lab.yaml writes it (null where it does not). */
export const declaredInput: JsonSchema = record({
  name: str(64),
  value_type: { type: 'string', description: '`number`, `integer`, `string`, `boolean`, `object`, `array`, `file`, `dataset`, `timeseries`, `table`; `object` when undeclared.' },
  required: { type: 'boolean' },
  description: { type: ['string', 'null'] },
  units: { type: ['string', 'null'] },
  default: { description: 'The lab\'s default value (any JSON), or null.' },
  schema: { type: ['object', 'null'], description: 'The JSON Schema a value must satisfy (its bounds), or null.' },
});
/** One public output of a hosted release's contract. */
export const declaredOutput: JsonSchema = record({
  name: str(64),
  value_type: { type: 'string' },
  description: { type: ['string', 'null'] },
  units: { type: ['string', 'null'] },
});

/** GET /hosted-releases/{reference}: what an invoker needs to fill inputs in; never the smoke fixtures. */
export const hostedRelease: JsonSchema = record({
  object: { const: 'hosted_release' },
  reference: str(300),
  sha256: sha256Hex,
  status: hostingStatus,
  ready: { type: 'boolean', description: 'Whether it takes invocations now.' },
  inputs: arr(declaredInput),
  outputs: arr(declaredOutput, { description: 'Public outputs only.' }),
  compute: record({
    profile: str(64),
    kind: { enum: ['cpu', 'gpu'] },
    min_instances: instances(0),
    max_instances: instances(1),
    max_runtime_seconds: count,
    price_per_second_usd: { ...usd, description: 'What an invocation is charged per second of compute, to the invoker.' },
  }),
});

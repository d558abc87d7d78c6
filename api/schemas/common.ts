/**
 * Shared JSON Schema (2020-12) fragments. Every schema is written once and read by
 * request validation, the OpenAPI document and the MCP tool list.
 */
export type JsonSchema = Record<string, unknown>;

export const uuid: JsonSchema = { type: 'string', format: 'uuid' };
export const sha256Hex: JsonSchema = { type: 'string', pattern: '^[0-9a-f]{64}$', description: '64 lowercase hex characters' };
/**
 * A digest a caller sends: bare hex, or as the service writes digests it returns
 * (`sha256:<hex>`). The `x-digest` keyword (kernel/ajv.ts) strips the prefix while
 * validating, so an operation always receives bare hex.
 */
export const digestInput: JsonSchema = { type: 'string', pattern: '^(sha256:)?[0-9a-f]{64}$', description: '64 lowercase hex characters; a `sha256:` prefix is accepted', 'x-digest': true };
/** Who may see a lab and its releases (labs and releases tables): this account, its team's members too, or anyone. */
export const VISIBILITIES = ['private', 'team', 'public'] as const;
export const packageSha256: JsonSchema = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' };
export const limit: JsonSchema = { type: 'integer', minimum: 1, maximum: 100, default: 20, description: 'page size (default 20, max 100)' };
export const cursor: JsonSchema = { type: ['string', 'null'], maxLength: 512, description: 'opaque next_cursor of the previous page' };
/** Counts and sizes: whole numbers a double holds exactly and a Postgres bigint can take. */
export const count: JsonSchema = { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER };
export const offset: JsonSchema = { ...count, default: 0 };
export const time: JsonSchema = { type: 'string', format: 'date-time' };
export const id = (prefix: string): JsonSchema => ({ type: 'string', minLength: 1, maxLength: 64, description: `identifier (${prefix}_...)` });

export function str(maxLength = 200, extra: JsonSchema = {}): JsonSchema {
  return { type: 'string', maxLength, ...extra };
}
export function nullableStr(maxLength = 200, extra: JsonSchema = {}): JsonSchema {
  return { type: ['string', 'null'], maxLength, ...extra };
}
export function obj(properties: Record<string, JsonSchema>, required: string[] = [], extra: JsonSchema = {}): JsonSchema {
  return { type: 'object', properties, required, additionalProperties: false, ...extra };
}
export function arr(items: JsonSchema, extra: JsonSchema = {}): JsonSchema {
  return { type: 'array', items, ...extra };
}
export const planExecute: JsonSchema = obj({ plan_id: uuid, plan_sha256: digestInput }, ['plan_id', 'plan_sha256']);

/** The error envelope of every failure. */
export const errorEnvelope: JsonSchema = obj({
  error: obj({
    type: str(), code: str(), message: str(2000), param: nullableStr(), details: { type: 'object' }, request_id: uuid,
  }, ['type', 'code', 'message', 'param', 'details', 'request_id']),
}, ['error']);

export const nextAction: JsonSchema = obj({
  tool: str(), description: str(500), arguments: { type: 'object' },
  http: obj({ method: str(), path: str(500) }, ['method', 'path']),
}, ['tool', 'description', 'arguments', 'http']);

/** Fields every successful tool-backed response carries beside the tool's own. */
export const envelopeFields: Record<string, JsonSchema> = {
  schema_version: { type: 'string', const: '2026-11-01' },
  request_id: uuid,
  warnings: arr({ type: 'object' }),
  next_actions: arr(nextAction),
  links: { type: 'object' },
};

export const nullableTime: JsonSchema = { type: ['string', 'null'], format: 'date-time' };
/** An amount in US dollars as the API shows it (micro-dollars inside). */
export const usd: JsonSchema = { type: 'number', minimum: 0 };
/** An amount in US dollars not known yet (a charge before its work has ended). */
export const nullableUsd: JsonSchema = { type: ['number', 'null'], minimum: 0 };
/** Why work that did not complete ended: a code and a message (a run's, an invocation's, a session's). */
export const endingError: JsonSchema = obj({ code: str(64), message: { type: 'string' } }, ['code', 'message']);
/** Free-form JSON the caller or a lab wrote (inputs, outputs, metadata): its shape is theirs. */
export const anyObject: JsonSchema = { type: 'object' };

/** One page of a cursor-paginated list. */
export function cursorPage(item: JsonSchema, extra: Record<string, JsonSchema> = {}): JsonSchema {
  return obj({ items: arr(item), has_more: { type: 'boolean' }, next_cursor: { type: ['string', 'null'] }, ...extra }, ['items', 'has_more', 'next_cursor', ...Object.keys(extra)]);
}

/** A finding of a plan or a check. */
export const finding: JsonSchema = obj({
  severity: { enum: ['info', 'warning', 'blocking'] },
  code: str(64),
  message: { type: 'string' },
  path: { type: ['string', 'null'] },
  location: obj({
    file: { type: ['string', 'null'] }, row: { type: ['integer', 'null'], minimum: 1, description: 'A table\'s line, its header being line 1.' }, column: { type: ['string', 'null'] },
  }, ['file', 'row', 'column'], { description: 'Where in an uploaded file the finding is, as far as its checker says (a PEtab lint\'s table, row and column).' }),
}, ['severity', 'code', 'message', 'path'], { description: 'A finding: `blocking` ones stop the plan from being executed.' });

/** The fields every prepare route answers about its plan (api/plans.ts planView). */
export const planFields: Record<string, JsonSchema> = {
  plan_id: uuid,
  plan_sha256: sha256Hex,
  expires_at: time,
  status: { enum: ['ready', 'blocked'] },
  findings: arr(finding),
  digest_input: {
    ...obj({ kind: str(64), account: id('acct'), proposal: anyObject, expires_at: time }, ['kind', 'account', 'proposal', 'expires_at']),
    description: 'The exact object `plan_sha256` digests (RFC 8785 canonical JSON), to recompute it.',
  },
};

/** A plan answer: `object`, the plan's fields and the kind's own (all required unless named optional). */
export function planRecord(object: string, own: Record<string, JsonSchema>, optional: string[] = []): JsonSchema {
  const properties = { object: { const: object }, ...planFields, ...own };
  return obj(properties, Object.keys(properties).filter((k) => !optional.includes(k)));
}

/** An object the service answers: every field is always present unless named in `optional`. */
export function record(properties: Record<string, JsonSchema>, optional: string[] = [], extra: JsonSchema = {}): JsonSchema {
  return obj(properties, Object.keys(properties).filter((k) => !optional.includes(k)), extra);
}

import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import { makeAjv } from '../kernel/ajv.ts';
import type { ToolDef } from './tools/tool.ts';
import type { JsonSchema } from './schemas/common.ts';
import { errors } from './errors.ts';


// Query strings are text: their values are coerced to the declared types (and a lone
// value to a one-item array). JSON bodies are typed already and are never coerced.
const queryAjv = makeAjv(true);
const strictAjv = makeAjv(false);

export interface CompiledInput {
  path?: ValidateFunction;
  query?: ValidateFunction;
  body?: ValidateFunction;
}

/** Builds the object schema of one input part from its property map. */
export function partSchema(props: Record<string, JsonSchema>, required: string[], patterns?: Record<string, JsonSchema>): JsonSchema {
  return { type: 'object', properties: props, required, additionalProperties: false, ...(patterns ? { patternProperties: patterns } : {}) };
}

/** Compiles a tool's input schemas once. */
export function compileInput(tool: ToolDef): CompiledInput {
  const out: CompiledInput = {};
  const { path, query, body, requiredQuery, queryPatterns } = tool.input;
  if (path) out.path = strictAjv.compile(partSchema(path, Object.keys(path)));
  if (query) out.query = queryAjv.compile(partSchema(query, requiredQuery ?? [], queryPatterns));
  if (body && body !== 'multipart') out.body = strictAjv.compile(body);
  return out;
}

/** `['arms', '0', 'label']` → `arms[0].label`. */
function fieldPath(parts: string[]): string {
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

/** `/arms/0/label` → `arms[0].label`. */
function paramPath(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  return fieldPath(parts);
}

/** The part of `root` a JSON pointer (`#/properties/a/oneOf`, an ajv error's schemaPath) names. */
function atPointer(root: unknown, pointer: string): unknown {
  return pointer.split('/').slice(1).reduce<unknown>(
    (node, key) => (node && typeof node === 'object' ? (node as Record<string, unknown>)[key.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined),
    root,
  );
}

/**
 * One ajv error as the spec's validation error: a precise code and the offending field.
 * `schema` is the schema validated against, where a one-of's alternatives are read.
 */
export function toApiError(err: ErrorObject, prefix?: string, schema?: unknown) {
  const at = (extra?: string) => {
    const p = paramPath(err.instancePath, extra);
    return prefix && !p ? prefix : p || null;
  };
  const pm = err.params as Record<string, unknown>;
  switch (err.keyword) {
    case 'required': {
      const p = at(String(pm.missingProperty));
      return errors.validation('parameter_missing', `${p} is required.`, p);
    }
    case 'additionalProperties': {
      const p = at(String(pm.additionalProperty));
      return errors.validation('parameter_unknown', `${p} is not a known parameter here.`, p);
    }
    case 'type': {
      const p = at();
      return errors.validation('parameter_invalid_type', `${p ?? 'body'} must be of type ${String(pm.type)}.`, p);
    }
    case 'enum':
    case 'const': {
      const p = at();
      const allowed = (pm.allowedValues as unknown[] | undefined) ?? [pm.allowedValue];
      return errors.validation('parameter_invalid_value', `${p} must be one of: ${allowed.map((v) => JSON.stringify(v)).join(', ')}.`, p, { allowed });
    }
    case 'format':
    case 'pattern': {
      const p = at();
      return errors.validation('parameter_invalid_format', `${p} is not a valid ${String(pm.format ?? `value (pattern ${String(pm.pattern)})`)}.`, p);
    }
    case 'minimum': case 'maximum': case 'exclusiveMinimum': case 'exclusiveMaximum': {
      const p = at();
      return errors.validation('parameter_out_of_range', `${p} ${err.message}.`, p);
    }
    case 'minLength': case 'maxLength': case 'minItems': case 'maxItems': case 'minProperties': case 'maxProperties': {
      const p = at();
      return errors.validation('parameter_invalid_length', `${p ?? 'body'} ${err.message}.`, p);
    }
    case 'oneOf': case 'anyOf': {
      const p = at();
      const branches = (atPointer(schema, err.schemaPath) ?? []) as Array<{ required?: string[] }>;
      const shapes = branches.map((b) => b.required ?? []);
      const text = shapes.map((r) => `{${r.join(', ')}}`).join(' or ');
      return errors.validation('parameter_invalid_combination', `${p ?? 'The body'} must contain exactly one of: ${text}.`, p, { accepted: shapes });
    }
    default: {
      const p = at();
      return errors.validation('parameter_invalid', `${p ?? 'body'} ${err.message ?? 'is invalid'}.`, p);
    }
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why a string cannot be stored as Postgres text or jsonb, or undefined: the database
 * refuses U+0000, and jsonb refuses a lone surrogate (JSON can escape one; UTF-8 cannot
 * encode it).
 */
export function textProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(s)) return 'must be valid UTF-8 text, without a lone surrogate (send binary data base64-encoded where the field allows it)';
  return undefined;
}

/** How deep a request's JSON may nest (a body is level 0, its fields level 1). */
export const MAX_NESTING = 32;

/**
 * The first thing in a request part that could not be handled, with where and why: a
 * string (value or object key) Postgres could not store, a number beyond a double, or
 * nesting deeper than MAX_NESTING (JSON.stringify, digests and jsonb all recurse).
 * Walked with an explicit stack, so no depth can overflow this walk itself.
 */
export function unstorableAt(data: unknown): { at: string[]; problem: string; code: 'parameter_invalid_format' | 'parameter_too_deep' | 'parameter_out_of_range' } | undefined {
  const stack: Array<{ value: unknown; at: string[] }> = [{ value: data, at: [] }];
  while (stack.length) {
    const { value, at } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) return { at, problem, code: 'parameter_invalid_format' };
      continue;
    }
    // JSON.parse reads 1e400 as Infinity, which no digest (RFC 8785) or jsonb can hold.
    if (typeof value === 'number' && !Number.isFinite(value)) return { at, problem: 'must be a finite number (a double)', code: 'parameter_out_of_range' };
    if (!value || typeof value !== 'object') continue;
    if (at.length >= MAX_NESTING) return { at, problem: `nests deeper than ${MAX_NESTING} levels`, code: 'parameter_too_deep' };
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    for (const [k, v] of entries.reverse()) {
      const problem = Array.isArray(value) ? undefined : textProblem(k);
      // An offending key is named with its unprintable part escaped.
      if (problem) return { at: [...at, JSON.stringify(k).slice(1, -1)], problem, code: 'parameter_invalid_format' };
      stack.push({ value: v, at: [...at, k] });
    }
  }
  return undefined;
}

/**
 * For documents a client stores (lab.yaml): why one is refused, or undefined. YAML's
 * `.inf` and `.nan` are refused too: jsonb would keep them as null, silently.
 */
export function unstorableProblem(doc: unknown): string | undefined {
  const found = unstorableAt(doc);
  return found && `has a value at ${fieldPath(found.at) || 'its root'} that ${found.problem}`;
}

/** Validates (and for queries coerces in place) one part; throws the first error. */
export function check(validate: ValidateFunction | undefined, data: unknown, prefix?: string): void {
  if (!validate) return;
  if (validate(data)) {
    const bad = unstorableAt(data);
    if (bad) {
      const p = bad.at.length ? fieldPath(bad.at) : prefix ?? null;
      throw errors.validation(bad.code, `${p ?? 'body'} ${bad.problem}.`, p);
    }
    return;
  }
  const errs = validate.errors!;
  // A failed oneOf reports each branch's miss first; the combination is the real error.
  const first = errs[0]!;
  const combo = errs.find((e) => (e.keyword === 'oneOf' || e.keyword === 'anyOf') && first.keyword === 'required' && first.instancePath === e.instancePath);
  throw toApiError(combo ?? first, prefix, validate.schema);
}

import type { ValidateFunction } from 'ajv/dist/2020.js';
import { LRUCache } from 'lru-cache';
import { makeAjv } from '../kernel/ajv.ts';
export { contractOf } from './labContract.ts';
import { listOf } from './labContract.ts';
import type { ContractInput } from './db/releases.ts';
import type { Finding } from './db/plans.ts';

// value_type vocabulary of docs/contract/gaps.md → the JSON Schema a value of it must satisfy.
const VALUE_TYPES: Record<string, object> = {
  number: { type: 'number' },
  integer: { type: 'integer' },
  string: { type: 'string' },
  boolean: { type: 'boolean' },
  object: {},
  array: { type: 'array' },
  file: { type: 'string', format: 'uuid' },
  dataset: { type: 'string', minLength: 1 },
  timeseries: { type: ['array', 'object'] },
  table: { type: ['array', 'object'] },
};

const ajv = makeAjv(false);
/**
 * Validators by their schema's text: a release's schema is read from its row anew for
 * every request, so a cache by object compiled it every time (about 1 ms of a hosted
 * invocation's api CPU) and Ajv kept each copy. Bounded; one dropped leaves Ajv too.
 */
const compiled = new LRUCache<string, { schema: object; validate: ValidateFunction }>({ max: 1_000, dispose: ({ schema }) => ajv.removeSchema(schema) });

interface DeclaredInput { name: string; value_type?: string; required?: boolean; schema?: object }

/** What inputs are checked against: the contract and the lab.yaml it came from. */
export interface Contracted { inputs: ContractInput[]; manifest: Record<string, unknown> }

function declaredInputs(release: Contracted): DeclaredInput[] {
  const io = (release.manifest as { io?: { inputs?: DeclaredInput[] } }).io;
  const extra = new Map(listOf(io?.inputs).map((i) => [i?.name, i]));
  return release.inputs.map((i) => ({ ...extra.get(i.name), ...i }));
}

/** A compiled validator for a declared schema (compiled once), or why it cannot be compiled. */
function validatorOf(schema: unknown): ValidateFunction | string {
  if (!schema || typeof schema !== 'object') return 'a schema must be an object';
  const text = JSON.stringify(schema);
  const known = compiled.get(text);
  if (known) return known.validate;
  try {
    const validate = ajv.compile(schema);
    compiled.set(text, { schema, validate });
    return validate;
  } catch (err) {
    ajv.removeSchema(schema);
    return (err as Error).message.split('\n')[0]!;
  }
}

/**
 * Checks run inputs against a capability's declared contract, at plan time and again
 * at execution. Unknown names are returned separately (the caller answers 422
 * `unknown_inputs`); missing required inputs and values that break their declared type
 * or schema are blocking findings.
 */
export function checkInputs(release: Contracted, inputs: Record<string, unknown>): { unknown: string[]; findings: Finding[] } {
  const declared = declaredInputs(release);
  const names = new Set(declared.map((d) => d.name));
  const unknown = Object.keys(inputs).filter((n) => !names.has(n)).sort();
  const findings: Finding[] = [];
  for (const d of declared) {
    const path = `inputs.${d.name}`;
    if (!(d.name in inputs)) {
      if (d.required) findings.push({ severity: 'blocking', code: 'missing_inputs', message: `Input ${d.name} is required.`, path });
      continue;
    }
    const validate = validatorOf(d.schema ?? VALUE_TYPES[d.value_type ?? 'object'] ?? {});
    if (typeof validate === 'string') {
      // The lab's own contract is at fault, not the caller: nothing can satisfy the input.
      findings.push({ severity: 'blocking', code: 'input_schema_invalid', message: `Input ${d.name} declares a schema that cannot be used: ${validate}.`, path });
      continue;
    }
    if (!validate(inputs[d.name])) {
      const e = validate.errors?.[0];
      findings.push({ severity: 'blocking', code: 'invalid_input_value', message: `Input ${d.name} ${e?.message ?? 'is invalid'} (declared ${d.value_type ?? 'object'}).`, path: `${path}${e?.instancePath ?? ''}` });
    }
  }
  return { unknown, findings };
}

/** The most declared inputs an `unknown_inputs` message names (its details list them all). */
const NAMED_IN_MESSAGE = 20;

/**
 * What an `unknown_inputs` refusal says besides the names it refuses: the inputs the lab
 * does declare, all of them for its details (`declared`), the first of them in a sentence
 * for its message.
 */
export function listDeclaredInputs(release: Contracted): { declared: ContractInput[]; sentence: string } {
  const declared = release.inputs.map((i) => ({ name: i.name, value_type: i.value_type, required: i.required }));
  const named = declared.slice(0, NAMED_IN_MESSAGE).map((i) => `${i.name} (${i.value_type}${i.required ? ', required' : ''})`);
  const more = declared.length - named.length;
  const sentence = declared.length
    ? `It declares ${named.join(', ')}${more ? ` and ${more} more (details.declared lists them all)` : ''}.`
    : 'It declares no inputs.';
  return { declared, sentence };
}

/**
 * Why a value does not have a declared value_type (docs/contract/gaps.md's vocabulary), or null
 * when it has: what a passport's output_contract check asks of each declared output.
 */
export function valueTypeProblem(valueType: string, value: unknown): string | null {
  const validate = validatorOf(VALUE_TYPES[valueType] ?? {});
  if (typeof validate === 'string' || validate(value)) return null;
  return `${validate.errors?.[0]?.message ?? 'is invalid'} (declared ${valueType})`;
}

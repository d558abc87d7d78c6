import { makeAjv } from '../validation.ts';
import type { JsonSchema } from './common.ts';

const VALUE_TYPES = ['number', 'integer', 'string', 'boolean', 'object', 'array', 'file', 'dataset', 'timeseries', 'table'];
const ALIAS = '^[a-z][a-z0-9_]{0,62}$';
const PORT_REF = `${ALIAS.slice(0, -1)}\\.[A-Za-z_][A-Za-z0-9_]*$`;

/**
 * The keys Silico adds to the runtime's lab.yaml (LAB-FORMAT.md), plus the shape of the
 * keys it reads. The runtime's own validator stays authoritative for everything else,
 * so unknown keys are allowed.
 */
export const labManifestSchema: JsonSchema = {
  type: 'object',
  required: ['schema_version', 'title', 'models'],
  properties: {
    schema_version: { const: '2.0' },
    title: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: 'string', maxLength: 5000 },
    package: { type: 'string', pattern: '^[a-z][a-z0-9-]{1,62}$' },
    tags: { type: 'array', items: { type: 'string', maxLength: 64 }, maxItems: 20 },
    intended_use: { enum: ['education', 'research', 'benchmark', 'production'] },
    compute_class: { enum: ['cpu', 'gpu'] },
    models: { type: 'array', items: { type: 'object', required: ['alias', 'path'], properties: { alias: { type: 'string', pattern: ALIAS }, path: { type: 'string' } } } },
    io: {
      type: 'object',
      properties: {
        inputs: {
          type: 'array',
          items: {
            type: 'object', required: ['name', 'maps_to'],
            properties: {
              name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$' }, maps_to: { type: 'string', pattern: PORT_REF },
              value_type: { enum: VALUE_TYPES }, required: { type: 'boolean' }, description: { type: 'string', maxLength: 2000 },
              schema: { type: 'object' },
            },
          },
        },
        outputs: {
          type: 'array',
          items: {
            type: 'object', required: ['name', 'maps_to'],
            properties: {
              name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$' }, maps_to: { type: 'string', pattern: PORT_REF },
              value_type: { enum: VALUE_TYPES }, public: { type: 'boolean' }, description: { type: 'string', maxLength: 2000 },
            },
          },
        },
      },
    },
    smoke: { type: 'object', properties: { inputs: { type: 'object' } }, additionalProperties: false },
  },
};

const validate = makeAjv(false).compile(labManifestSchema);

/** Problems with a lab.yaml's Silico keys, as `path: message` lines (empty when valid). */
export function labManifestProblems(manifest: unknown): string[] {
  if (validate(manifest)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message}`);
}

import { makeAjv } from '../../kernel/ajv.ts';
import type { JsonSchema } from './common.ts';

const VALUE_TYPES = ['number', 'integer', 'string', 'boolean', 'object', 'array', 'file', 'dataset', 'timeseries', 'table'];
const ALIAS = '^[a-z][a-z0-9_]{0,62}$';
const PORT_REF = `${ALIAS.slice(0, -1)}\\.[A-Za-z_][A-Za-z0-9_]*$`;

/** A package reference as the runtime's packer accepts it: `name` or `namespace/name`. */
const PACKAGE_SEGMENT = '[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?';

/**
 * The shape of the lab.yaml keys Silico acts on (docs/contract/lab-format.md): the contract, packing
 * identity, compute class and smoke inputs. Keys that describe rather than drive
 * (`description`, `tags`, `intended_use`, `licenses`, `authors`, UI layouts) are free text
 * in the ecosystem's published labs and are kept verbatim, never checked here; unknown keys
 * are allowed. The runtime's own validator stays authoritative for everything else.
 */
export const labManifestSchema: JsonSchema = {
  type: 'object',
  required: ['schema_version', 'title', 'models'],
  properties: {
    schema_version: { const: '2.0' },
    title: { type: 'string', minLength: 1, maxLength: 200 },
    package: { type: 'string', pattern: `^(?:${PACKAGE_SEGMENT}/)?${PACKAGE_SEGMENT}$` },
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
              value_type: { enum: VALUE_TYPES }, required: { type: 'boolean' },
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
              value_type: { enum: VALUE_TYPES }, public: { type: 'boolean' },
            },
          },
        },
      },
    },
    smoke: { type: 'object', properties: { inputs: { type: 'object' } }, additionalProperties: false },
  },
};

const validate = makeAjv(false).compile(labManifestSchema);

/** Top-level keys docs/contract/lab-format.md names (the runtime's and Silico's); any other is kept as written. */
export const KNOWN_LAB_KEYS = new Set([
  'schema_version', 'title', 'description', 'package', 'version', 'models', 'children', 'wiring', 'runtime', 'io',
  'tags', 'intended_use', 'compute_class', 'smoke', 'licenses', 'authors', 'visualization',
]);

/** Problems with a lab.yaml's Silico keys, as `path: message` lines (empty when valid). */
export function labManifestProblems(manifest: unknown): string[] {
  if (validate(manifest)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message}`);
}

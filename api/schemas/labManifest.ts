import { makeAjv } from '../../kernel/ajv.ts';
import type { JsonSchema } from './common.ts';

/**
 * Silico's own bounds on a lab.yaml, beyond what the runtime asks (docs/contract/lab-format.md,
 * "Silico's own checks", says each one's reason). Each is far wider than anything in the
 * ecosystem's public labs (their longest alias has 88 characters).
 */
export const LAB_BOUNDS = {
  /** Aliases and io names: they are quoted in findings, events, artifact names and study parameters (200 characters wherever the API carries a name). */
  nameChars: 200,
  /** A port reference (`alias.port`, or a child's `child.alias.port`). */
  referenceChars: 1000,
  /** The title, shown wherever the lab is listed. */
  titleChars: 200,
} as const;

const name = { maxLength: LAB_BOUNDS.nameChars };
const reference = { maxLength: LAB_BOUNDS.referenceChars };
/** A list's entries' keys, bounded where they are there: whether the list and its entries have the right shape is the runtime's to say. */
const entries = (properties: Record<string, JsonSchema>): JsonSchema => ({ items: { properties } });

/**
 * Silico's own checks of a lab.yaml: its named bounds and the keys it adds for the service
 * contract (`compute_class`, `smoke`, an input's `schema`). Everything else of the format
 * (required keys, what an alias or a port may be, wiring, runtime) is the runtime's to judge
 * (./../workspaces/runtimeJudge.ts): no pattern, enum or required key here refuses a lab the
 * runtime accepts. Keys that describe rather than drive are kept verbatim, never checked.
 */
export const labManifestSchema: JsonSchema = {
  type: 'object',
  properties: {
    title: { maxLength: LAB_BOUNDS.titleChars },
    compute_class: { enum: ['cpu', 'gpu'] },
    models: entries({ alias: name }),
    children: entries({ alias: name }),
    wiring: entries({ from: reference, to: { items: reference } }),
    io: {
      properties: {
        inputs: entries({ name, maps_to: reference, schema: { type: 'object' } }),
        outputs: entries({ name, maps_to: reference }),
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

/** Where a lab.yaml passes Silico's own bounds or keys, as `path: message` lines (empty when it does not). */
export function labManifestProblems(manifest: unknown): string[] {
  if (validate(manifest)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'}: ${e.message}`);
}

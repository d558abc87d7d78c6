/** The value types of Silico's contract (docs/contract/lab-format.md); an entry without one, or with another, is `object`. */
export const VALUE_TYPES = ['number', 'integer', 'string', 'boolean', 'object', 'array', 'file', 'dataset', 'timeseries', 'table'];

/** An io entry's value type as the contract takes it. */
export function valueTypeOf(declared: unknown): string {
  return typeof declared === 'string' && VALUE_TYPES.includes(declared) ? declared : 'object';
}

/** The service contract a lab.yaml declares (docs/contract/lab-format.md: value_type defaults to object). */
interface IoEntry { name: string; maps_to: string; value_type?: string; required?: boolean; public?: boolean }

/**
 * A list of a lab.yaml as written, or none: a workspace's lab.yaml may be malformed (its
 * wrong types are reported as findings elsewhere), so readers take only what is there.
 */
export function listOf<T>(value: T[] | undefined): T[] {
  return Array.isArray(value) ? value : [];
}

/** The service contract of a lab.yaml: inputs and outputs with their value types. */
export function contractOf(manifest: { io?: { inputs?: IoEntry[]; outputs?: IoEntry[] } }) {
  const entries = (list: IoEntry[] | undefined) => listOf(list).filter((e) => e && typeof e === 'object');
  return {
    inputs: entries(manifest.io?.inputs).map((i) => ({ name: i.name, value_type: valueTypeOf(i.value_type), required: i.required ?? false })),
    outputs: entries(manifest.io?.outputs).map((o) => ({ name: o.name, value_type: valueTypeOf(o.value_type) })),
  };
}

/**
 * The contract as a reader needs it to fill inputs in (hub_inspect, a hosted release):
 * each input's units, bounds (its JSON Schema) and default, each public output's units,
 * as the lab.yaml declares them (null where it does not).
 */
export function declaredContractOf(manifest: Record<string, unknown>) {
  const io = (manifest.io ?? {}) as { inputs?: Record<string, unknown>[]; outputs?: Record<string, unknown>[] };
  const entries = (list: Record<string, unknown>[] | undefined) => listOf(list).filter((e) => e && typeof e === 'object');
  return {
    inputs: entries(io.inputs).map((i) => ({
      name: i.name, value_type: valueTypeOf(i.value_type), required: i.required ?? false, description: i.description ?? null, units: i.units ?? null, default: i.default ?? null, schema: i.schema ?? null,
    })),
    outputs: entries(io.outputs).filter((o) => o.public !== false).map((o) => ({ name: o.name, value_type: valueTypeOf(o.value_type), description: o.description ?? null, units: o.units ?? null })),
  };
}

const text = (v: unknown): v is string => typeof v === 'string' && v.trim().length > 0;

/**
 * What a release row indexes for Hub search from descriptive lab.yaml keys, which are free
 * text in the ecosystem: `tags` as the strings of a list (or one string), `intended_use`
 * when it is a string. Anything else stays only in the stored manifest, never refused.
 */
export function hubIndexOf(manifest: { tags?: unknown; intended_use?: unknown; compute_class?: unknown }) {
  const tags = Array.isArray(manifest.tags) ? manifest.tags.filter(text) : text(manifest.tags) ? [manifest.tags] : [];
  return {
    tags: [...new Set(tags.map((t) => t.trim()))],
    intended_use: text(manifest.intended_use) ? manifest.intended_use.trim() : null,
    compute_class: manifest.compute_class === 'gpu' ? 'gpu' : 'cpu',
  };
}

/** A lab's private smoke fixtures: the inputs its lab.yaml declares under `smoke` (none: {}). */
export function smokeInputsOf(manifest: Record<string, unknown>): Record<string, unknown> {
  const smoke = manifest.smoke as { inputs?: unknown } | undefined;
  return smoke?.inputs && typeof smoke.inputs === 'object' && !Array.isArray(smoke.inputs) ? smoke.inputs as Record<string, unknown> : {};
}

/** The service contract a lab.yaml declares (LAB-FORMAT.md: value_type defaults to object). */
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
    inputs: entries(manifest.io?.inputs).map((i) => ({ name: i.name, value_type: i.value_type ?? 'object', required: i.required ?? false })),
    outputs: entries(manifest.io?.outputs).map((o) => ({ name: o.name, value_type: o.value_type ?? 'object' })),
  };
}

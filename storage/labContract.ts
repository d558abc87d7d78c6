/** The service contract a lab.yaml declares (LAB-FORMAT.md: value_type defaults to object). */
interface IoEntry { name: string; maps_to: string; value_type?: string; required?: boolean; public?: boolean }

/** The service contract of a lab.yaml: inputs and outputs with their value types. */
export function contractOf(manifest: { io?: { inputs?: IoEntry[]; outputs?: IoEntry[] } }) {
  return {
    inputs: (manifest.io?.inputs ?? []).map((i) => ({ name: i.name, value_type: i.value_type ?? 'object', required: i.required ?? false })),
    outputs: (manifest.io?.outputs ?? []).map((o) => ({ name: o.name, value_type: o.value_type ?? 'object' })),
  };
}

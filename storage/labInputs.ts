import { listOf } from './labContract.ts';

/** Inputs whose values name a stored resource of the caller's instead of carrying data. */
export type ReferenceKind = 'file' | 'dataset';

/** The declared inputs of a lab.yaml whose value is a file id or a dataset id. */
export function referenceInputs(manifest: unknown): Array<{ name: string; kind: ReferenceKind }> {
  const io = (manifest as { io?: { inputs?: Array<{ name?: unknown; value_type?: unknown }> } } | null)?.io;
  return listOf(io?.inputs)
    .filter((i) => i && typeof i.name === 'string' && (i.value_type === 'file' || i.value_type === 'dataset'))
    .map((i) => ({ name: i.name as string, kind: i.value_type as ReferenceKind }));
}

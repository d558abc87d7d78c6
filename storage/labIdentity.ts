import { stripAsPython } from './labManifests.ts';

/**
 * A lab's packing identity. A lab.yaml may declare `package` (`name` or `namespace/name`)
 * and `version`; the runtime's packer then packs under what it declares and refuses a
 * different `--package`/`--version`. When the lab declares none, Silico passes its own
 * (`<namespace>/<lab>`, the release or revision version) without editing the file.
 */
export interface DeclaredIdentity {
  /** As written (trimmed), e.g. `sir-teaching` or `acme/sir-teaching`. */
  package?: string;
  /** The name part of `package`. */
  name?: string;
  /** As written (trimmed); the runtime reads only a string. */
  version?: string;
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && stripAsPython(v) ? stripAsPython(v) : undefined);

/** What a lab.yaml declares about its identity (the runtime reads only non-empty strings). */
export function declaredIdentity(manifest: unknown): DeclaredIdentity {
  const m = (manifest && typeof manifest === 'object' ? manifest : {}) as { package?: unknown; version?: unknown };
  const pkg = text(m.package);
  return { package: pkg, name: pkg?.split('/').pop(), version: text(m.version) };
}

/**
 * What to pass the runtime's packer: null where the lab declares its own (the packer uses
 * the declared value), ours otherwise. Used for releases and for managed runs alike.
 */
export function packerIdentity(manifest: unknown, ours: { package: string; version: string }): { package: string | null; version: string | null } {
  const declared = declaredIdentity(manifest);
  return { package: declared.package ? null : ours.package, version: declared.version ? null : ours.version };
}

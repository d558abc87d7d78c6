/** The identity a download is verified against, shared by file and in-memory downloads. */
export interface ExpectedIdentity {
  /** Lowercase hex (a `sha256:` prefix is accepted). */
  sha256: string;
  size?: number | null;
}

/** `sha256:ABC…` → `abc…`. */
export function normalizeSha256(value: string): string {
  return value.replace(/^sha256:/i, '').toLowerCase();
}

/** What a session step's evidence may be, shared by the api (its schemas) and the workers (its checks). */
export const EVIDENCE_KINDS = ['run', 'passport', 'file', 'dataset', 'experiment', 'resource', 'note'] as const;
export type EvidenceKind = typeof EVIDENCE_KINDS[number];

/**
 * An evidence reference: `<kind>:<id>`, optionally pinned to a digest with
 * `@<sha256>` (files, datasets, resources), or `note:<text>`.
 */
export const EVIDENCE_REF_PATTERN = '^((run|passport|file|dataset|experiment|resource):[A-Za-z0-9_-]{1,100}(@[0-9a-f]{64})?|note:\\S[\\s\\S]*)$';

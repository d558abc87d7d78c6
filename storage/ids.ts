import { randomUUID } from 'node:crypto';
import { ulid } from 'ulidx';

/** Prefixes of the ULID-shaped identifiers docs/contract/gaps.md names. */
export type IdPrefix = 'acct' | 'prn' | 'key' | 'cli' | 'rel' | 'lab' | 'exp' | 'ds' | 'inv' | 'ses' | 'art' | 'pp' | 'res' | 'pub' | 'grant' | 'whe';

/** A prefixed, time-sortable identifier such as `lab_01J...`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** UUID v4 for the identifiers the spec types as UUID. */
export function newUuid(): string {
  return randomUUID();
}

/** RFC 3339 UTC with milliseconds, the only time format the API shows. */
export function isoTime(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

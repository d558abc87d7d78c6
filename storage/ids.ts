import { randomUUID } from 'node:crypto';
import { ulid } from 'ulidx';
import { v5 as uuidV5 } from 'uuid';

/** Prefixes of the ULID-shaped identifiers docs/contract/gaps.md names. */
export type IdPrefix = 'acct' | 'prn' | 'key' | 'cli' | 'rel' | 'lab' | 'exp' | 'ds' | 'inv' | 'ses' | 'art' | 'pp' | 'res' | 'pub' | 'grant' | 'whe' | 'petab';

/** A prefixed, time-sortable identifier such as `lab_01J...`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** UUID v4 for the identifiers the spec types as UUID. */
export function newUuid(): string {
  return randomUUID();
}

/** The namespace of keyedUuid's name-based UUIDs (fixed for ever: ids already made depend on it). */
const KEYED_NAMESPACE = '4700a6f9-ae65-4fd2-8660-6553d14359c2';

/**
 * The UUID (v5, name-based) of what one idempotent request makes: the same account,
 * operation and Idempotency-Key give the same id, so a retry finds what an earlier
 * attempt recorded before its answer was lost.
 */
export function keyedUuid(accountId: string, operation: string, idempotencyKey: string): string {
  return uuidV5(`${accountId}\n${operation}\n${idempotencyKey}`, KEYED_NAMESPACE);
}

/** RFC 3339 UTC with milliseconds, the only time format the API shows. */
export function isoTime(d: Date | string | null | undefined): string | null {
  if (d === null || d === undefined) return null;
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

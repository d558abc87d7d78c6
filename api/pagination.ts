import { errors } from './errors.ts';
import type { KeysetPage } from '../storage/db/pagination.ts';

/**
 * Cursors are opaque to clients: base64url of the JSON sort key of the last row. A
 * cursor that does not decode to what this list expects is a 422 on `cursor`, never a 500.
 */
export function encodeCursor(values: Array<string | number>): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

export function decodeCursor(cursor: string | null | undefined, arity: number): Array<string | number> | null {
  if (cursor === null || cursor === undefined || cursor === '') return null;
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    values = undefined;
  }
  if (!Array.isArray(values) || values.length !== arity || !values.every((v) => typeof v === 'string' || typeof v === 'number')) {
    throw errors.validation('invalid_cursor', 'cursor is not a next_cursor returned by this list.', 'cursor');
  }
  return values as Array<string | number>;
}

/** The list shape every paginated tool returns. */
export function pageBody<T>(page: KeysetPage<unknown>, items: T[]): { items: T[]; has_more: boolean; next_cursor: string | null } {
  return { items, has_more: page.hasMore, next_cursor: page.nextAfter ? encodeCursor(page.nextAfter) : null };
}

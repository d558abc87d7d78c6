import { errors } from './errors.ts';
import { textProblem } from './validation.ts';
import type { KeysetPage } from '../storage/db/pagination.ts';

/**
 * Cursors are opaque to clients: base64url of the JSON sort key of the last row. A
 * cursor that does not decode to what this list expects is a 422 on `cursor`, never a 500.
 */
export function encodeCursor(values: Array<string | number | null>): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What each position of a cursor may hold, as its list's sort columns take it: text (a
 * name, a text id, or a timestamp rendered as text), a uuid id, or an offset. A cursor
 * is decoded from client bytes, so each value is checked before it meets the database.
 */
const CURSOR_VALUE = {
  text: (v: unknown) => typeof v === 'string' && v.length <= 512 && !textProblem(v),
  uuid: (v: unknown) => typeof v === 'string' && UUID.test(v),
  offset: (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0,
  /** A sort value that is a number, or null for a row that has none. */
  nullableNumber: (v: unknown) => v === null || (typeof v === 'number' && Number.isFinite(v)),
};
export type CursorShape = ReadonlyArray<keyof typeof CURSOR_VALUE>;

export function decodeCursor(cursor: string | null | undefined, shape: ReadonlyArray<Exclude<keyof typeof CURSOR_VALUE, 'nullableNumber'>>): Array<string | number> | null;
export function decodeCursor(cursor: string | null | undefined, shape: CursorShape): Array<string | number | null> | null;
export function decodeCursor(cursor: string | null | undefined, shape: CursorShape): Array<string | number | null> | null {
  if (cursor === null || cursor === undefined || cursor === '') return null;
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    values = undefined;
  }
  if (!Array.isArray(values) || values.length !== shape.length || !values.every((v, i) => CURSOR_VALUE[shape[i]!](v))) {
    throw errors.validation('invalid_cursor', 'cursor is not a next_cursor returned by this list.', 'cursor');
  }
  return values as Array<string | number | null>;
}

/** The list shape every paginated tool returns. */
export function pageBody<T>(page: KeysetPage<unknown>, items: T[]): { items: T[]; has_more: boolean; next_cursor: string | null } {
  return { items, has_more: page.hasMore, next_cursor: page.nextAfter ? encodeCursor(page.nextAfter) : null };
}

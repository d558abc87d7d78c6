import type { Knex } from 'knex';

export interface KeysetPage<T> {
  rows: T[];
  hasMore: boolean;
  /** Sort-key values of the last row, to continue after it (null where the row has none); null on the last page. */
  nextAfter: Array<string | number | null> | null;
}

/**
 * Keyset pagination over a unique column tuple (the last column must be unique, e.g. an
 * id). Reads one row more than asked to know whether another page exists.
 */
export async function keysetPage<T extends object>(
  query: Knex.QueryBuilder,
  opts: {
    columns: string[]; direction: 'asc' | 'desc'; limit: number; after?: Array<string | number> | null;
    /** SQL for columns that are computed (selected under that alias), e.g. a timestamp as text. */
    sortExpr?: Record<string, string>;
  },
): Promise<KeysetPage<T>> {
  const { columns, direction, limit, after, sortExpr = {} } = opts;
  const sql = columns.map((c) => sortExpr[c] ?? '??');
  const idents = columns.filter((c) => !sortExpr[c]);
  if (after) {
    if (after.length !== columns.length) throw new RangeError('cursor does not match this list');
    const cmp = direction === 'asc' ? '>' : '<';
    query.whereRaw(`(${sql.join(', ')}) ${cmp} (${columns.map(() => '?').join(', ')})`, [...idents, ...after]);
  }
  query.orderByRaw(sql.map((x) => `${x} ${direction}`).join(', '), idents);
  const rows = (await query.limit(limit + 1)) as T[];
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  return {
    rows: page,
    hasMore,
    nextAfter: hasMore && last ? columns.map((c) => (last as Record<string, unknown>)[c.split(".").pop()!] as string | number) : null,
  };
}

import type { Db } from './knex.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';

export interface FileRow {
  id: string; account_id: string; name: string; format: string; content_type: string; size_bytes: number;
  sha256: string; object_key: string; origin: Record<string, unknown> | null; created_at: Date;
}

export async function insertFile(db: Db, f: Omit<FileRow, 'created_at' | 'origin'> & { origin?: Record<string, unknown> | null; origin_key?: string | null }): Promise<FileRow | undefined> {
  const [row] = await db('files')
    .insert({ ...f, origin: f.origin ? JSON.stringify(f.origin) : null, origin_key: f.origin_key ?? null })
    .onConflict(['account_id', 'origin_key']).ignore()
    .returning('*');
  return row as FileRow | undefined;
}

export async function getFile(db: Db, id: string, accountId: string): Promise<FileRow | undefined> {
  return db('files').where({ id, account_id: accountId }).first();
}

export async function fileByOrigin(db: Db, accountId: string, originKey: string): Promise<FileRow | undefined> {
  return db('files').where({ account_id: accountId, origin_key: originKey }).first();
}

/** Newest first; `query` matches the name, `format` filters. */
export async function listFiles(db: Db, accountId: string, f: { query?: string | null; format?: string | null; limit: number; after?: Array<string | number> | null }): Promise<KeysetPage<FileRow>> {
  const expr = `to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;
  const q = db('files').where({ account_id: accountId }).select('*', db.raw(`${expr} as sort_at`));
  if (f.query) q.andWhere('name', 'ilike', `%${f.query.replace(/[%_\\]/g, '\\$&')}%`);
  if (f.format) q.andWhere({ format: f.format });
  return keysetPage<FileRow>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: expr } });
}

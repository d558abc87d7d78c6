import type { Db } from './knex.ts';
import type { FileRow } from './files.ts';
import { isSqlState } from './sqlStates.ts';

/** A dataset version as stored (migration 012). */
export interface DatasetRow {
  id: string;
  account_id: string;
  name: string;
  version: number;
  status: 'registering' | 'registered' | 'failed';
  manifest: Record<string, unknown> & { members: unknown[] };
  manifest_sha256: string;
  problems: unknown[] | null;
  created_at: Date;
  registered_at: Date | null;
}

/** The newest version of a name that did not fail (identical re-registrations answer it). */
export async function latestLiveDataset(db: Db, accountId: string, name: string): Promise<DatasetRow | undefined> {
  return db('datasets').where({ account_id: accountId, name }).whereNot({ status: 'failed' }).orderBy('version', 'desc').first();
}

/** A version of this account, or undefined (another account's is the same as none). */
export async function getDataset(db: Db, id: string, accountId?: string): Promise<DatasetRow | undefined> {
  return db('datasets').where({ id, ...(accountId ? { account_id: accountId } : {}) }).first();
}

export async function listDatasets(db: Db, accountId: string, p: { limit: number; offset: number }): Promise<DatasetRow[]> {
  return db('datasets').where({ account_id: accountId }).whereNot({ status: 'failed' })
    .orderBy([{ column: 'name' }, { column: 'version', order: 'desc' }]).offset(p.offset).limit(p.limit);
}

/**
 * Records the next version of a name as `registering`. Returns undefined when another
 * version took the same number at the same moment (the caller retries).
 */
export async function insertDataset(db: Db, d: Pick<DatasetRow, 'id' | 'account_id' | 'name' | 'manifest' | 'manifest_sha256'>): Promise<DatasetRow | undefined> {
  const max = await db('datasets').where({ account_id: d.account_id, name: d.name }).max<{ max: number | null }>('version as max').first();
  try {
    const [row] = await db('datasets').insert({ ...d, manifest: JSON.stringify(d.manifest), version: (max?.max ?? 0) + 1, status: 'registering' }).returning('*');
    return row;
  } catch (err) {
    if (isSqlState(err, '23505')) return undefined;
    throw err;
  }
}

/** Ends a registration once: registered, or failed with its problems. */
export async function finishDataset(db: Db, id: string, problems: unknown[]): Promise<void> {
  await db('datasets').where({ id, status: 'registering' }).update({
    status: problems.length ? 'failed' : 'registered', problems: JSON.stringify(problems), registered_at: problems.length ? null : db.fn.now(),
  });
}

/** The files of an account among `ids`, by id. */
export async function filesById(db: Db, accountId: string, ids: string[]): Promise<Map<string, FileRow>> {
  const rows: FileRow[] = await db('files').where({ account_id: accountId }).whereIn('id', [...new Set(ids)]);
  return new Map(rows.map((f) => [f.id, f]));
}

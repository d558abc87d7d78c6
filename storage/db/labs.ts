import type { Db } from './knex.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';

export interface LabRow {
  id: string; account_id: string; name: string; title: string; description: string;
  visibility: 'private' | 'team' | 'public'; hub_listed: boolean; content_settings: Record<string, unknown>; created_at: Date; updated_at: Date;
}

export async function getLab(db: Db, id: string, accountId: string): Promise<LabRow | undefined> {
  return db('labs').where({ id, account_id: accountId }).first();
}

/** Owned labs, most recently changed first, filtered by title/name text and visibility. */
export async function listLabs(db: Db, accountId: string, f: { query?: string | null; visibility?: string | null; limit: number; after?: Array<string | number> | null }): Promise<KeysetPage<LabRow>> {
  const expr = `to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;
  const q = db('labs').where({ account_id: accountId }).select('*', db.raw(`${expr} as sort_at`));
  if (f.query) {
    const like = `%${f.query.replace(/[%_\\]/g, '\\$&')}%`;
    q.andWhere((w) => w.where('title', 'ilike', like).orWhere('name', 'ilike', like));
  }
  if (f.visibility) q.andWhere({ visibility: f.visibility });
  return keysetPage<LabRow>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: expr } });
}

/** Exact release references of a lab (`<namespace>/<name>@<version>`), oldest first. */
export async function labReleases(db: Db, accountId: string, name: string): Promise<Array<{ ref: string; package_sha256: string; visibility: string }>> {
  const rows = await db('releases').where({ account_id: accountId, name }).orderBy('id').select('namespace', 'name', 'version', 'package_sha256', 'visibility');
  return rows.map((r) => ({ ref: `${r.namespace}/${r.name}@${r.version}`, package_sha256: `sha256:${r.package_sha256}`, visibility: r.visibility }));
}

export async function updateLab(db: Db, id: string, patch: Partial<Pick<LabRow, 'title' | 'description' | 'content_settings'>>): Promise<void> {
  const row: Record<string, unknown> = { updated_at: db.fn.now() };
  if (patch.title !== undefined) row.title = patch.title;
  if (patch.description !== undefined) row.description = patch.description;
  if (patch.content_settings !== undefined) row.content_settings = JSON.stringify(patch.content_settings);
  await db('labs').where({ id }).update(row);
}

/** Re-scopes a lab and its releases in one transaction; nothing is deleted or re-released. */
export async function setLabVisibility(db: Db, lab: LabRow, visibility: LabRow['visibility']): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('labs').where({ id: lab.id }).update({ visibility, updated_at: trx.fn.now() });
    await trx('releases').where({ account_id: lab.account_id, name: lab.name }).update({ visibility });
  });
}

/** Lists or unlists a lab and its releases on the Hub (an operator's decision); visibility is untouched. */
export async function setLabListing(db: Db, accountId: string, name: string, listed: boolean): Promise<number> {
  return db.transaction(async (trx) => {
    await trx('labs').where({ account_id: accountId, name }).update({ hub_listed: listed, updated_at: trx.fn.now() });
    return Number(await trx('releases').where({ account_id: accountId, name }).update({ hub_listed: listed }));
  });
}

/** A lab by id alone (workspaces and publications name their lab). */
export async function getLabById(db: Db, id: string): Promise<LabRow | undefined> {
  return db('labs').where({ id }).first();
}

/** The workspaces of a lab, oldest first. */
export async function labWorkspaceIds(db: Db, labId: string): Promise<string[]> {
  return db('workspaces').where({ lab_id: labId }).orderBy('created_at').pluck('id');
}

/** The lab row, locked for the rest of the transaction (its name is about to be read or changed). */
export async function lockLab(trx: Db, id: string): Promise<LabRow | undefined> {
  return trx('labs').where({ id }).forUpdate().first();
}

/** Whether the lab's name is already an address: a release, or a publication on its way to one. */
export async function labIsReleased(db: Db, lab: Pick<LabRow, 'id' | 'account_id' | 'name'>): Promise<boolean> {
  const [release, publication] = await Promise.all([
    db('releases').where({ account_id: lab.account_id, name: lab.name }).first('id'),
    db('publications').where({ lab_id: lab.id }).whereNot({ status: 'failed' }).first('id'),
  ]);
  return Boolean(release || publication);
}

/** Another lab of the account with this name (or a release under it), if any. */
export async function labNameTaken(db: Db, accountId: string, name: string, exceptLabId: string): Promise<boolean> {
  const [lab, release] = await Promise.all([
    db('labs').where({ account_id: accountId, name }).whereNot({ id: exceptLabId }).first('id'),
    db('releases').where({ account_id: accountId, name }).first('id'),
  ]);
  return Boolean(lab || release);
}

/** Renames a lab; false when another lab of its account took the name meanwhile (nothing changes). */
export async function renameLab(trx: Db, id: string, name: string): Promise<boolean> {
  try {
    // A savepoint: a unique violation must not abort the caller's transaction.
    await trx.transaction((sp) => sp('labs').where({ id }).update({ name, updated_at: sp.fn.now() }));
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === '23505') return false;
    throw err;
  }
}

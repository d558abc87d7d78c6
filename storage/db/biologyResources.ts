import type { Db } from './knex.ts';

export interface BiologyResourceRow {
  id: string;
  account_id: string;
  fetch_id: string;
  source_id: string;
  record_id: string;
  format: string;
  version: string | null;
  media_type: string;
  url: string;
  sha256: string;
  size_bytes: number;
  retrieved_at: Date;
  created_at: Date;
}

export type NewBiologyResource = Omit<BiologyResourceRow, 'created_at'>;

/**
 * Records a fetch's resources, all or none, once: a retried step finds them recorded
 * (by fetch and record) and returns those.
 */
export async function recordBiologyResources(db: Db, rows: NewBiologyResource[]): Promise<BiologyResourceRow[]> {
  return db.transaction(async (trx) => {
    await trx('biology_resources').insert(rows).onConflict(['fetch_id', 'record_id']).ignore();
    const recorded: BiologyResourceRow[] = await trx('biology_resources').where({ fetch_id: rows[0]!.fetch_id }).whereIn('record_id', rows.map((r) => r.record_id));
    const byRecord = new Map(recorded.map((r) => [r.record_id, r]));
    return rows.map((r) => byRecord.get(r.record_id)!);
  });
}

/** A resource of this account, or undefined (another account's answers like a missing one). */
export async function getBiologyResource(db: Db, id: string, accountId: string): Promise<BiologyResourceRow | undefined> {
  return db('biology_resources').where({ id, account_id: accountId }).first();
}

/** Records which resource stands behind which path of a new revision (in the revision's transaction). */
export async function pinResources(trx: Db, revisionId: string, pins: Array<{ path: string; resource_id: string }>): Promise<void> {
  if (pins.length) await trx('revision_resources').insert(pins.map((p) => ({ revision_id: revisionId, ...p })));
}

/**
 * The resources pinned into a workspace up to revision `number` whose tree (`tree`) still
 * holds their bytes at the pinned path: a file changed or removed since is no longer
 * evidence of it. The latest pin of a path counts.
 */
export async function pinnedResources(db: Db, workspaceId: string, number: number, tree: Record<string, { sha256: string }>): Promise<Array<BiologyResourceRow & { path: string; revision_id: string }>> {
  const rows: Array<BiologyResourceRow & { path: string; revision_id: string }> = await db('revision_resources as p')
    .join('revisions as v', 'v.id', 'p.revision_id')
    .join('biology_resources as r', 'r.id', 'p.resource_id')
    .where('v.workspace_id', workspaceId)
    .andWhere('v.number', '<=', number)
    .orderBy('v.number', 'desc')
    .select('r.*', 'p.path', 'p.revision_id');
  const seen = new Set<string>();
  return rows.filter((r) => {
    if (seen.has(r.path) || tree[r.path]?.sha256 !== r.sha256) return false;
    seen.add(r.path);
    return true;
  });
}

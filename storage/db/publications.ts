import type { Db } from './knex.ts';

/** Ends a publication that is still publishing as failed, with its findings (its version is free again). */
export async function failPublication(db: Db, id: string, findings: unknown[]): Promise<void> {
  await db('publications').where({ id, status: 'publishing' }).update({ status: 'failed', findings: JSON.stringify(findings), finished_at: db.fn.now() });
}

/** A publication as stored (migration 010). */
export interface PublicationRow {
  id: string; account_id: string; plan_id: string; lab_id: string; revision_id: string; namespace: string; name: string;
  version: string; release_notes: string; status: 'publishing' | 'published' | 'failed'; approval: Record<string, unknown>;
  findings: unknown[] | null; release_id: string | null; created_at: Date; finished_at: Date | null;
  /** The environment lock it packs and smoke-runs in (null: the default runtime's). */
  environment_lock_sha256: string | null;
}

export async function getPublication(db: Db, id: string, opts: { forUpdate?: boolean } = {}): Promise<PublicationRow | undefined> {
  const q = db('publications').where({ id });
  return (opts.forUpdate ? q.forUpdate() : q).first();
}

/** Versions of a lab already released or being published. */
export async function takenVersions(db: Db, namespace: string, name: string): Promise<string[]> {
  const released: string[] = await db('releases').where({ namespace, name }).pluck('version');
  const inFlight: string[] = await db('publications').where({ namespace, name, status: 'publishing' }).pluck('version');
  return [...released, ...inFlight];
}

export async function insertPublication(db: Db, p: Omit<PublicationRow, 'status' | 'findings' | 'release_id' | 'created_at' | 'finished_at'>): Promise<void> {
  await db('publications').insert({ ...p, status: 'publishing' });
}

/** Ends a publication as published with its release. */
export async function markPublished(db: Db, id: string, releaseId: string): Promise<void> {
  await db('publications').where({ id }).update({ status: 'published', release_id: releaseId, finished_at: db.fn.now() });
}

/** A lab's publications, oldest first, as GET /labs shows them. */
export async function labPublications(db: Db, labId: string): Promise<Array<Pick<PublicationRow, 'id' | 'version' | 'status' | 'findings' | 'created_at' | 'finished_at'>>> {
  return db('publications').where({ lab_id: labId }).orderBy('created_at').select('id', 'version', 'status', 'findings', 'created_at', 'finished_at');
}

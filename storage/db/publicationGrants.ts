import semver from 'semver';
import type { Db } from './knex.ts';
import { newId } from '../ids.ts';

export interface GrantRow {
  id: string; account_id: string; lab_name: string; version_range: string; note: string;
  expires_at: Date | null; revoked_at: Date | null; uses: number; last_used_at: Date | null; created_at: Date;
}

export async function createGrant(db: Db, g: { accountId: string; labName: string; versionRange: string; note?: string; expiresAt: Date | null }): Promise<GrantRow> {
  const [row] = await db('publication_grants')
    .insert({ id: newId('grant'), account_id: g.accountId, lab_name: g.labName, version_range: g.versionRange, note: g.note ?? '', expires_at: g.expiresAt })
    .returning('*');
  return row as GrantRow;
}

export async function listGrants(db: Db, accountId?: string): Promise<GrantRow[]> {
  const q = db('publication_grants').orderBy('created_at', 'desc');
  if (accountId) q.where({ account_id: accountId });
  return q;
}

export async function getGrant(db: Db, id: string): Promise<GrantRow | undefined> {
  return db('publication_grants').where({ id }).first();
}

export async function revokeGrant(db: Db, id: string): Promise<void> {
  await db('publication_grants').where({ id }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
}

/** Why a grant cannot approve a publication of `name@version` now, or null if it can. */
export function grantRefusal(g: GrantRow, name: string, version: string, now = new Date()): { code: 'grant_inactive' | 'grant_mismatch'; reason: string } | null {
  if (g.revoked_at) return { code: 'grant_inactive', reason: 'revoked' };
  if (g.expires_at && new Date(g.expires_at).getTime() <= now.getTime()) return { code: 'grant_inactive', reason: 'expired' };
  if (g.lab_name !== '*' && g.lab_name !== name) return { code: 'grant_mismatch', reason: `the grant covers the lab ${g.lab_name}, not ${name}` };
  if (!semver.satisfies(version, g.version_range, { includePrerelease: true })) return { code: 'grant_mismatch', reason: `${version} is outside the grant's range ${g.version_range}` };
  return null;
}

/** Locks the grant for this publication and counts the use (inside the publication's transaction). */
export async function lockGrant(trx: Db, id: string, accountId: string): Promise<GrantRow | undefined> {
  return trx('publication_grants').where({ id, account_id: accountId }).forUpdate().first();
}

export async function countGrantUse(trx: Db, id: string): Promise<void> {
  await trx('publication_grants').where({ id }).update({ uses: trx.raw('uses + 1'), last_used_at: trx.fn.now() });
}

import type { Db } from './knex.ts';
import { newId, newUuid } from '../ids.ts';
import { treeDigest, treeSize, type Tree } from '../trees.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';

export interface WorkspaceRow {
  id: string; account_id: string; lab_id: string; title: string; head_revision_id: string;
  origin: Record<string, unknown> | null; created_at: Date; updated_at: Date;
}
export interface RevisionRow {
  id: string; workspace_id: string; parent_revision_id: string | null; number: number; tree: Tree;
  tree_sha256: string; size_bytes: number; plan_id: string | null; created_at: Date;
}

/** A lab name made from a title: lowercase words joined by dashes, starting with a letter. */
export function slugOf(title: string): string {
  return (title.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 50) || 'lab').replace(/^([^a-z])/, 'lab-$1');
}

/** A lab's name: `base` (a valid name), unique in the account (a suffix when taken). */
async function freeLabName(db: Db, accountId: string, base: string): Promise<string> {
  const taken = new Set((await db('labs').where({ account_id: accountId }).andWhere('name', 'like', `${base}%`).select('name')).map((r) => r.name));
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

/** Creates a lab with its workspace and revision 1 (the given tree, empty by default). */
export async function createWorkspace(db: Db, p: { accountId: string; title: string; name?: string; tree?: Tree; origin?: Record<string, unknown> | null }): Promise<{ workspace: WorkspaceRow; revision: RevisionRow; labName: string }> {
  return db.transaction(async (trx) => {
    const labId = newId('lab');
    const labName = await freeLabName(trx, p.accountId, p.name ?? slugOf(p.title));
    await trx('labs').insert({ id: labId, account_id: p.accountId, name: labName, title: p.title });
    const workspaceId = newUuid();
    const revisionId = newUuid();
    const tree = p.tree ?? {};
    const [workspace] = await trx('workspaces').insert({ id: workspaceId, account_id: p.accountId, lab_id: labId, title: p.title, origin: p.origin ? JSON.stringify(p.origin) : null }).returning('*');
    const [revision] = await trx('revisions').insert({ id: revisionId, workspace_id: workspaceId, number: 1, tree: JSON.stringify(tree), tree_sha256: treeDigest(tree), size_bytes: treeSize(tree) }).returning('*');
    await trx('workspaces').where({ id: workspaceId }).update({ head_revision_id: revisionId });
    return { workspace: { ...workspace, head_revision_id: revisionId } as WorkspaceRow, revision: revision as RevisionRow, labName };
  });
}

export async function getWorkspace(db: Db, id: string, accountId: string): Promise<WorkspaceRow | undefined> {
  return db('workspaces').where({ id, account_id: accountId }).first();
}

export async function getRevision(db: Db, workspaceId: string, revisionId: string): Promise<RevisionRow | undefined> {
  return db('revisions').where({ id: revisionId, workspace_id: workspaceId }).first();
}

/** Most recently changed first; `query` matches the title. */
export async function listWorkspaces(db: Db, accountId: string, f: { query?: string | null; limit: number; after?: Array<string | number> | null }): Promise<KeysetPage<WorkspaceRow>> {
  const expr = `to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;
  const q = db('workspaces').where({ account_id: accountId }).select('*', db.raw(`${expr} as sort_at`));
  if (f.query) q.andWhere('title', 'ilike', `%${f.query.replace(/[%_\\]/g, '\\$&')}%`);
  return keysetPage<WorkspaceRow>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: expr } });
}

/**
 * Appends a revision if `baseRevisionId` is still the head (row-locked), in one
 * transaction with `also` (e.g. consuming the plan). Returns undefined when the head moved.
 */
export async function appendRevision(
  db: Db, workspaceId: string, baseRevisionId: string, tree: Tree, planId: string | null, also?: (trx: Db, revisionId: string) => Promise<void>,
): Promise<RevisionRow | undefined> {
  return db.transaction(async (trx) => {
    const ws = await trx('workspaces').where({ id: workspaceId }).forUpdate().first('head_revision_id');
    if (!ws || ws.head_revision_id !== baseRevisionId) return undefined;
    const base = await trx('revisions').where({ id: baseRevisionId }).first('number');
    const id = newUuid();
    const [rev] = await trx('revisions').insert({
      id, workspace_id: workspaceId, parent_revision_id: baseRevisionId, number: base.number + 1, tree: JSON.stringify(tree),
      tree_sha256: treeDigest(tree), size_bytes: treeSize(tree), plan_id: planId,
    }).returning('*');
    await trx('workspaces').where({ id: workspaceId }).update({ head_revision_id: id, updated_at: trx.fn.now() });
    if (also) await also(trx, id);
    return rev as RevisionRow;
  });
}

/** A revision by id alone (workers executing an accepted run or publication). */
export async function getRevisionById(db: Db, id: string): Promise<RevisionRow | undefined> {
  return db('revisions').where({ id }).first();
}

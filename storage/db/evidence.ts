import type { Db } from './knex.ts';

/**
 * The records that stand behind a workspace revision: its runs (managed runs of exactly
 * this revision) and its publications, newest first.
 */
export async function revisionEvidence(db: Db, workspaceId: string, revisionId: string) {
  const [runs, publications] = await Promise.all([
    db('runs').where({ workspace_id: workspaceId, revision_id: revisionId }).orderBy('created_at', 'desc').limit(50)
      .select('id', 'status', 'resolved_ref', 'package_sha256', 'artifact_count', 'created_at', 'finished_at'),
    db('publications').where({ revision_id: revisionId }).orderBy('created_at', 'desc')
      .select('id', 'namespace', 'name', 'version', 'status', 'release_id', 'created_at', 'finished_at'),
  ]);
  return { runs, publications };
}

/** Where a release came from, when a record says: the publication that made it, and its revision. */
export async function releaseOrigin(db: Db, releaseId: string) {
  return db('publications').join('revisions', 'revisions.id', 'publications.revision_id')
    .where('publications.release_id', releaseId)
    .first('publications.id as publication_id', 'publications.approval', 'publications.created_at', 'revisions.workspace_id', 'revisions.id as revision_id', 'revisions.tree_sha256');
}

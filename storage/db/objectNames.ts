import type { Db } from './knex.ts';

/** The key prefixes whose objects records name (biology staging has its own purge). */
export const NAMED_PREFIXES = ['blobs/', 'files/'] as const;

/**
 * The one place that knows every record naming an object in the store: an uploaded or
 * imported file (`files.object_key`), a run's or a hosted invocation's artifact, a biology
 * record, a file of a workspace revision or of a release (its tree and the files inside
 * its package), a release's archive, a built-in skill's file, and a workspace change
 * prepared but not applied yet, or a PEtab import planned and not executed (its plan's tree, until the plan expires). Of `keys`,
 * returns those nothing names. A content address is named wherever its sha256 is.
 */
export async function unnamedObjects(db: Db, keys: string[]): Promise<string[]> {
  if (!keys.length) return [];
  const { rows } = await db.raw<{ rows: Array<{ key: string }> }>(`
    WITH candidate(key) AS (SELECT unnest(?::text[])),
    blob(sha256) AS (
      SELECT substr(key, length('blobs/sha256/') + 1) FROM candidate WHERE key LIKE 'blobs/sha256/%'
    ),
    named_blob(sha256) AS (
      SELECT sha256 FROM run_artifacts WHERE sha256 IN (SELECT sha256 FROM blob)
      UNION SELECT sha256 FROM hosted_invocation_artifacts WHERE sha256 IN (SELECT sha256 FROM blob)
      UNION SELECT sha256 FROM biology_resources WHERE sha256 IN (SELECT sha256 FROM blob)
      UNION SELECT e.value->>'sha256' FROM revisions, jsonb_each(revisions.tree) e
      UNION SELECT e.value->>'sha256' FROM releases, jsonb_each(releases.tree) e
      UNION SELECT f->>'sha256' FROM releases, jsonb_array_elements(releases.files) f
      UNION SELECT f->>'sha256' FROM skills, jsonb_array_elements(skills.manifest->'files') f
      UNION SELECT e.value->>'sha256' FROM plans, jsonb_each(plans.proposal->'tree') e
        WHERE plans.kind IN ('workspace_change', 'petab_import') AND plans.expires_at > now() AND jsonb_typeof(plans.proposal->'tree') = 'object'
    ),
    named(key) AS (
      SELECT object_key FROM files WHERE object_key IN (SELECT key FROM candidate)
      UNION SELECT archive_key FROM releases WHERE archive_key IN (SELECT key FROM candidate)
      UNION SELECT 'blobs/sha256/' || sha256 FROM named_blob
    )
    SELECT key FROM candidate WHERE key NOT IN (SELECT key FROM named WHERE key IS NOT NULL)`, [keys]);
  return rows.map((r) => r.key);
}

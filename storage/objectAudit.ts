import type { Db } from './db/knex.ts';
import { blobKey, type ObjectStore } from './objects.ts';
import { hashStoredObject } from './objectHash.ts';
import { NAMED_PREFIXES, unnamedObjects } from './db/objectNames.ts';

/** What the object store holds against what the records say (the soak's audit of bytes). */
export interface ObjectAudit {
  artifacts: number;
  /** Artifacts (of runs and hosted invocations) and files whose stored bytes do not re-hash to their record. */
  bytes_differ: number;
  /** Records whose object is gone. */
  objects_missing: number;
  /** Objects in the store that no record names (the hourly sweep removes them after a day). */
  orphans: number;
}

/** Re-hashes every artifact and file of `accountIds` (or all) and, unscoped, counts the orphans. */
export async function auditObjects(db: Db, objects: ObjectStore, accountIds?: string[]): Promise<ObjectAudit> {
  const scope = <T extends { whereIn: (c: string, v: string[]) => T }>(q: T, column: string) => (accountIds ? q.whereIn(column, accountIds) : q);
  const runArtifacts = await scope(db('run_artifacts').join('runs', 'runs.id', 'run_artifacts.run_id'), 'runs.account_id').select('run_artifacts.sha256');
  const invocationArtifacts = await scope(db('hosted_invocation_artifacts').join('hosted_invocations', 'hosted_invocations.id', 'hosted_invocation_artifacts.invocation_id'), 'hosted_invocations.account_id').select('hosted_invocation_artifacts.sha256');
  const files = await scope(db('files'), 'account_id').select('sha256', 'object_key');
  const records = [
    ...[...runArtifacts, ...invocationArtifacts].map((a: { sha256: string }) => ({ key: blobKey(a.sha256), sha256: a.sha256 })),
    ...files.map((f: { sha256: string; object_key: string }) => ({ key: f.object_key, sha256: f.sha256 })),
  ];
  // A blob named by many records is read once.
  const distinct = [...new Map(records.map((r) => [`${r.key} ${r.sha256}`, r])).values()];
  let bytes_differ = 0;
  let objects_missing = 0;
  for (const r of distinct) {
    const got = await hashStoredObject(objects, r.key);
    if (!got) objects_missing += 1;
    else if (got.sha256 !== r.sha256) bytes_differ += 1;
  }
  let orphans = 0;
  if (!accountIds) {
    const keys = (await Promise.all(NAMED_PREFIXES.map((p) => objects.list(p)))).flat().map((o) => o.key);
    for (let i = 0; i < keys.length; i += 1000) orphans += (await unnamedObjects(db, keys.slice(i, i + 1000))).length;
  }
  return { artifacts: runArtifacts.length + invocationArtifacts.length, bytes_differ, objects_missing, orphans };
}

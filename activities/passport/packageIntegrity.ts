import { getRun, type RunRow } from '../../storage/db/runs.ts';
import { getReleaseById, type ReleaseRow } from '../../storage/db/releases.ts';
import { getRevision, getRevisionById, type RevisionRow } from '../../storage/db/workspaces.ts';
import { blobKey } from '../../storage/objects.ts';
import { sha256Hex } from '../../storage/digest.ts';
import { hashStoredObject, storedBytesOrNull } from '../../storage/objectHash.ts';
import { treeDigest } from '../../storage/trees.ts';
import { ArchiveError, readZipMembers } from '../../storage/archives.ts';
import { checked, type CheckResult, type LabSubject } from '../../storage/passportDocument.ts';
import type { CheckDeps } from './deps.ts';

const MAX_MEMBER_BYTES = 256 * 1024 * 1024;

/**
 * package_integrity: the bytes a subject runs, re-hashed from the object store now. A hub
 * run's release archive (its address and every member its integrity list names); a
 * managed run's or a revision's tree (its digest recomputed, every blob streamed and
 * hashed). A run must also name the package it ran by the digest recorded for it.
 */
export async function packageIntegrity(deps: CheckDeps, subject: LabSubject): Promise<CheckResult> {
  if (subject.kind === 'workspace_revision') {
    const rev = await getRevision(deps.db, subject.workspace_id, subject.revision_id);
    if (!rev) return checked('package_integrity', 'unknown', { reason: 'the revision is no longer recorded' });
    return treeIntegrity(deps, rev, null);
  }
  const run = (await getRun(deps.db, subject.run_id))!;
  if (run.kind === 'hub') {
    const release = run.release_id ? await getReleaseById(deps.db, run.release_id) : undefined;
    if (!release) return checked('package_integrity', 'unknown', { reason: 'the run names no recorded release' });
    return archiveIntegrity(deps, release, run);
  }
  const rev = run.revision_id ? await getRevisionById(deps.db, run.revision_id) : undefined;
  if (!rev) return checked('package_integrity', 'unknown', { reason: 'the run names no recorded revision' });
  return treeIntegrity(deps, rev, run);
}

async function treeIntegrity(deps: CheckDeps, rev: RevisionRow, run: RunRow | null): Promise<CheckResult> {
  const mismatches: Array<Record<string, unknown>> = [];
  for (const [p, f] of Object.entries(rev.tree).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const got = await hashStoredObject(deps.objects, blobKey(f.sha256), deps.beat);
    if (got?.sha256 !== f.sha256 || got.size !== f.size) {
      mismatches.push({ path: p, recorded_sha256: f.sha256, computed_sha256: got?.sha256 ?? null, recorded_size: f.size, computed_size: got?.size ?? null });
    }
  }
  const computedTree = treeDigest(rev.tree);
  const runMatches = run ? run.package_sha256 === `sha256:${rev.tree_sha256}` : true;
  const evidence = {
    source: 'revision_tree', workspace_id: rev.workspace_id, revision_id: rev.id,
    recorded_tree_sha256: rev.tree_sha256, computed_tree_sha256: computedTree, files_checked: Object.keys(rev.tree).length, mismatches,
    ...(run ? { run_package_sha256: run.package_sha256 } : {}),
  };
  return checked('package_integrity', computedTree === rev.tree_sha256 && !mismatches.length && runMatches ? 'passed' : 'failed', evidence);
}

async function archiveIntegrity(deps: CheckDeps, release: ReleaseRow, run: RunRow): Promise<CheckResult> {
  const base = {
    source: 'release_archive', release_id: release.id, reference: `${release.namespace}/${release.name}@${release.version}`,
    package_sha256: `sha256:${release.package_sha256}`, run_package_sha256: run.package_sha256,
  };
  if (!release.archive_key) return checked('package_integrity', 'unknown', { ...base, reason: 'the release has no stored archive' });
  const recorded = release.archive_key.replace(/^blobs\/sha256\//, '');
  deps.beat();
  const bytes = await storedBytesOrNull(deps.objects, release.archive_key);
  const computed = bytes ? sha256Hex(bytes) : null;
  const memberMismatches: Array<Record<string, unknown>> = [];
  if (bytes && computed === recorded) {
    // The archive is the one recorded; its members are checked against its own integrity list too.
    try {
      const members = await readZipMembers(bytes, release.files.map((f) => f.path), MAX_MEMBER_BYTES);
      for (const f of release.files) {
        const got = sha256Hex(members.get(f.path)!);
        if (got !== f.sha256) memberMismatches.push({ path: f.path, recorded_sha256: f.sha256, computed_sha256: got });
      }
    } catch (err) {
      if (!(err instanceof ArchiveError)) throw err;
      memberMismatches.push(...(err.members.length ? err.members : ['(archive)']).map((p) => ({ path: p, problem: err.message })));
    }
  }
  const ok = computed === recorded && !memberMismatches.length && run.package_sha256 === base.package_sha256;
  return checked('package_integrity', ok ? 'passed' : 'failed', {
    ...base, archive: { recorded_sha256: recorded, computed_sha256: computed, size_bytes: bytes?.length ?? null },
    members_checked: release.files.length, member_mismatches: memberMismatches,
  });
}

import { getRun, listArtifacts, type RunRow } from '../../storage/db/runs.ts';
import { getReleaseById, type ReleaseRow } from '../../storage/db/releases.ts';
import { getRevision, getWorkspace, type RevisionRow, type WorkspaceRow } from '../../storage/db/workspaces.ts';
import { releaseOrigin } from '../../storage/db/evidence.ts';
import { revisionLineage } from '../../storage/db/passports.ts';
import { treeDigest } from '../../storage/trees.ts';
import { pinnedResources } from '../../storage/db/biologyResources.ts';
import { checked, type CheckResult, type LabSubject } from '../../storage/passportDocument.ts';
import type { CheckDeps } from './deps.ts';
import { getLock } from '../../storage/db/environments.ts';
import { readRuntimeLock } from '../../storage/runtimePins.ts';
import { digestJson, sha256Hex } from '../../storage/digest.ts';

/** One link of a chain of origins: verified true or false where records allow, null where they say nothing checkable. */
type Link = { link: string; verified: boolean | null } & Record<string, unknown>;

const DEFAULT_RUNTIME = readRuntimeLock();

/**
 * The environment a run executed in: the default runtime's lock, or a recorded lock whose
 * text still digests to the identity the run names.
 */
async function environmentLink(deps: CheckDeps, runId: string, sha256: string): Promise<Link> {
  if (sha256 === DEFAULT_RUNTIME.sha256) return { link: 'run_environment', run_id: runId, environment_lock_sha256: sha256, python: DEFAULT_RUNTIME.python, default_runtime: true, verified: true };
  const lock = await getLock(deps.db, sha256);
  return { link: 'run_environment', run_id: runId, environment_lock_sha256: sha256, python: lock?.python ?? null, default_runtime: false, verified: Boolean(lock) && sha256Hex(lock!.lock) === sha256 };
}

/** A run's artifacts as sorted `file_name sha256` lines: what a reused run copies from its source. */
async function artifactMap(deps: CheckDeps, runId: string): Promise<string[]> {
  return (await listArtifacts(deps.db, runId)).map((a) => `${a.file_name} ${a.sha256}`).sort();
}

/**
 * A run answered from another (reuse): the run it names, checked to be a completed run
 * that executed and is the same computation (package, inputs, seed, compute profile,
 * runtime) whose artifacts are the ones this run lists. The source may be another
 * account's (a public release's owner who allows reuse): only its id and these booleans
 * are shown; its own passport is its owner's.
 */
async function reuseLink(deps: CheckDeps, run: RunRow, sourceId: string): Promise<Link> {
  const source = await getRun(deps.db, sourceId);
  const base = { link: 'run_reused_from', run_id: run.id, source_run_id: sourceId };
  if (!source) return { ...base, verified: null, detail: 'the source run is no longer recorded' };
  const sameComputation = source.package_sha256 === run.package_sha256 && digestJson(source.inputs) === digestJson(run.inputs) && source.seed === run.seed
    && source.compute_profile === run.compute_profile && (source.runtime_sha256 ?? null) === (run.runtime_sha256 ?? null);
  const [mine, theirs] = await Promise.all([artifactMap(deps, run.id), artifactMap(deps, sourceId)]);
  const sameArtifacts = mine.length === theirs.length && mine.every((x, i) => x === theirs[i]);
  const executed = source.status === 'completed' && source.reused_from === null;
  return { ...base, source_completed: executed, same_computation: sameComputation, same_artifacts: sameArtifacts, verified: executed && sameComputation && sameArtifacts };
}

/** How many fork/release hops are followed (a fork of a release published from a fork ...). */
const MAX_DEPTH = 4;

/**
 * provenance_chain: where the subject came from, each link checked against the records
 * it joins. A run → its release or revision, the environment lock it ran in, and the run it
 * was answered from when it was reused; a revision → its parents back to the first,
 * the biology records pinned into it, and a fork's first revision → the exact release it
 * copied; a release → the revision it was published from (shown for the caller's own
 * releases only).
 */
export async function provenanceChain(deps: CheckDeps, accountId: string, subject: LabSubject): Promise<CheckResult> {
  const links: Link[] = [];
  if (subject.kind === 'workspace_revision') {
    const ws = await getWorkspace(deps.db, subject.workspace_id, accountId);
    const rev = ws && await getRevision(deps.db, ws.id, subject.revision_id);
    if (ws && rev) links.push(...await revisionLinks(deps, accountId, ws, rev, 0));
  } else {
    const run = (await getRun(deps.db, subject.run_id, accountId))!;
    if (run.kind === 'hub') {
      const release = run.release_id ? await getReleaseById(deps.db, run.release_id) : undefined;
      links.push({ link: 'run_release', run_id: run.id, release_id: run.release_id, reference: run.resolved_ref, run_package_sha256: run.package_sha256, verified: Boolean(release) && run.package_sha256 === `sha256:${release!.package_sha256}` });
      if (release) links.push(...await releaseLinks(deps, accountId, release, 0));
    } else {
      const ws = await getWorkspace(deps.db, run.workspace_id!, accountId);
      const rev = ws && await getRevision(deps.db, ws.id, run.revision_id!);
      links.push({ link: 'run_revision', run_id: run.id, workspace_id: run.workspace_id, revision_id: run.revision_id, run_package_sha256: run.package_sha256, verified: Boolean(rev) && run.package_sha256 === `sha256:${rev!.tree_sha256}` });
      if (ws && rev) links.push(...await revisionLinks(deps, accountId, ws, rev, 0));
    }
    if (run.runtime_sha256) links.push(await environmentLink(deps, run.id, run.runtime_sha256));
    if (run.reused_from) links.push(await reuseLink(deps, run, run.reused_from));
  }
  const status = links.some((l) => l.verified === false) ? 'failed' : links.some((l) => l.verified === true) ? 'passed' : 'unknown';
  return checked('provenance_chain', status, { links });
}

/** A revision's lineage back to revision 1, then the fork it started from, if any. */
async function revisionLinks(deps: CheckDeps, accountId: string, ws: WorkspaceRow, rev: RevisionRow, depth: number): Promise<Link[]> {
  const lineage = await revisionLineage(deps.db, rev.id);
  // Intact: one workspace, numbers stepping down by one to revision 1, each row's parent the next.
  const intact = lineage.every((r, i) => r.workspace_id === ws.id && r.number === rev.number - i && (i === lineage.length - 1 ? r.parent_revision_id === null && r.number === 1 : r.parent_revision_id === lineage[i + 1]!.id));
  const links: Link[] = [{
    link: 'revision_lineage', workspace_id: ws.id, verified: intact,
    revisions: lineage.map((r) => ({ revision_id: r.id, number: r.number, tree_sha256: r.tree_sha256 })),
  }];
  // Records fetched from biology sources and pinned into the tree: the bytes at the path are the record's.
  for (const r of await pinnedResources(deps.db, ws.id, rev.number, rev.tree)) {
    links.push({
      link: 'pinned_resource', path: r.path, resource_id: r.id, source_id: r.source_id, record_id: r.record_id, version: r.version,
      retrieved_at: r.retrieved_at.toISOString(), url: r.url, resource_sha256: r.sha256, tree_sha256_at_path: rev.tree[r.path]?.sha256 ?? null,
      verified: rev.tree[r.path]?.sha256 === r.sha256,
    });
  }
  const origin = ws.origin as { kind?: string; reference?: string; package_sha256?: string; release_id?: string } | null;
  if (origin?.kind !== 'fork') return links;
  const release = origin.release_id ? await getReleaseById(deps.db, origin.release_id) : undefined;
  const first = lineage.at(-1);
  const copied = release ? treeDigest(release.tree) : null;
  links.push({
    link: 'fork_origin', reference: origin.reference, release_id: origin.release_id ?? null, recorded_package_sha256: origin.package_sha256 ?? null,
    release_package_sha256: release ? `sha256:${release.package_sha256}` : null, first_revision_tree_sha256: first?.tree_sha256 ?? null, release_tree_sha256: copied,
    verified: Boolean(release) && origin.package_sha256 === `sha256:${release!.package_sha256}` && first?.number === 1 && first.tree_sha256 === copied,
  });
  if (release && depth < MAX_DEPTH) links.push(...await releaseLinks(deps, accountId, release, depth + 1));
  return links;
}

/** The workspace revision a release was published from: its tree must be the release's. */
async function releaseLinks(deps: CheckDeps, accountId: string, release: ReleaseRow, depth: number): Promise<Link[]> {
  const reference = `${release.namespace}/${release.name}@${release.version}`;
  const origin = await releaseOrigin(deps.db, release.id);
  if (!origin) return [{ link: 'release_source', reference, verified: null, detail: 'no publication record: the release was recorded by the operator, not published from a workspace revision' }];
  // Another owner's workspace is theirs: that a source exists is all that is said.
  if (release.account_id !== accountId) return [{ link: 'release_source', reference, verified: null, detail: 'published from a workspace revision of another account, not shown' }];
  const releaseTree = treeDigest(release.tree);
  const links: Link[] = [{
    link: 'release_source', reference, publication_id: origin.publication_id, workspace_id: origin.workspace_id, revision_id: origin.revision_id,
    revision_tree_sha256: origin.tree_sha256, release_tree_sha256: releaseTree, verified: origin.tree_sha256 === releaseTree,
  }];
  const ws = await getWorkspace(deps.db, origin.workspace_id, accountId);
  const rev = ws && await getRevision(deps.db, ws.id, origin.revision_id);
  if (ws && rev && depth < MAX_DEPTH) links.push(...await revisionLinks(deps, accountId, ws, rev, depth + 1));
  return links;
}

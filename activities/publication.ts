import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { blobKey } from '../storage/objects.ts';
import { insertRelease } from '../storage/db/releases.ts';
import { failPublication, getPublication, markPublished } from '../storage/db/publications.ts';
import { getRevisionById } from '../storage/db/workspaces.ts';
import { getLabById } from '../storage/db/labs.ts';
import type { Finding } from '../storage/db/plans.ts';
import { contractOf, hubIndexOf } from '../storage/labContract.ts';
import { packerIdentity } from '../storage/labIdentity.ts';
import { readLabManifests } from '../storage/labManifests.ts';
import { readRuntimeLock, runtimePinFindings, runtimeProblems } from '../storage/runtimePins.ts';
import { writeTree } from './execution/labFiles.ts';
import { PackRefused, packLab, type Packed } from './execution/packLab.ts';
import { smokeRun } from './execution/smokeRun.ts';
import { environmentPython, EnvironmentUnavailable } from './environments/python.ts';
import type { EnvironmentSettings } from '../kernel/environments.ts';
import type { Sandbox } from './execution/sandbox.ts';
import { parseManifestText } from '../storage/labManifests.ts';

/** A descriptive key as text when the lab wrote text there (the ecosystem writes them freely), else the lab's own. */
const textOr = (v: unknown, fallback: string) => (typeof v === 'string' && v.trim() ? v : fallback);

export interface PublicationInfo { publicationId: string; smokeInputs: Record<string, unknown> | null }
export interface PackResult { package_sha256: string; archive_key: string; files: Packed['files']; runtime_problems: string[] }

async function load(db: Db, objects: ObjectStore, publicationId: string) {
  const pub = await getPublication(db, publicationId);
  if (!pub) throw new Error(`no publication ${publicationId}`);
  const rev = (await getRevisionById(db, pub.revision_id))!;
  const manifest = parseManifestText((await objects.getBytes(blobKey(rev.tree['lab.yaml']!.sha256))).toString('utf8'));
  // A lab that declares its package/version is packed under them (the plan checked they are this release's).
  const identity = packerIdentity(manifest, { package: `${pub.namespace}/${pub.name}`, version: pub.version });
  return { pub, rev, manifest, identity };
}

/**
 * Publication: compute-queue activities pack the revision with the runtime's packer and
 * smoke-run it (child processes); control steps record the outcome. Nothing is released
 * unless every check passed.
 */
export function createPublicationActivities(deps: { db: Db; objects: ObjectStore; python: string; environments: EnvironmentSettings; sandbox: Sandbox }) {
  /** The interpreter of the environment the publication packs and smoke-runs in (built first when needed). */
  const pythonOf = async (pub: { environment_lock_sha256: string | null }): Promise<string> => {
    try {
      return await environmentPython(deps, pub.environment_lock_sha256);
    } catch (err) {
      if (err instanceof EnvironmentUnavailable) throw ApplicationFailure.nonRetryable(err.message, err.code);
      throw err;
    }
  };
  // The runtime this worker runs labs with, read once: what the release cannot satisfy is recorded with it.
  const lock = readRuntimeLock();
  const scratch = async <T>(f: (dir: string) => Promise<T>): Promise<T> => {
    const dir = await mkdtemp(path.join(tmpdir(), 'silico-publish-'));
    try {
      return await f(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
  return {
    async publicationInfo(publicationId: string): Promise<PublicationInfo> {
      const { manifest } = await load(deps.db, deps.objects, publicationId);
      return { publicationId, smokeInputs: manifest?.smoke?.inputs ?? null };
    },

    async packRevision(publicationId: string): Promise<PackResult> {
      const { pub, rev, manifest, identity } = await load(deps.db, deps.objects, publicationId);
      // In its own environment it has what it declares; in the default runtime, what that lacks is recorded.
      const pins = pub.environment_lock_sha256 ? [] : runtimePinFindings(lock, await readLabManifests(deps.objects, rev.tree, manifest));
      const python = await pythonOf(pub);
      return scratch(async (dir) => {
        if (!(await writeTree(deps.objects, rev.tree, path.join(dir, 'lab')))) throw new Error('stored revision content does not match its digests');
        let packed: Packed;
        try {
          packed = await packLab(deps.sandbox, python, path.join(dir, 'lab'), path.join(dir, 'pack'), identity);
        } catch (err) {
          // The runtime refused the lab: the author's to fix, so no retry, and its own message reaches them.
          if (err instanceof PackRefused) throw ApplicationFailure.nonRetryable(err.message, err.code);
          throw err;
        }
        const sha = await deps.objects.putBlob(await readFile(packed.archive), 'application/zip');
        return {
          package_sha256: packed.package_sha256, archive_key: blobKey(sha), files: packed.files,
          runtime_problems: runtimeProblems(pins),
        };
      });
    },

    async smokeTest(publicationId: string, inputs: Record<string, unknown>): Promise<{ ok: boolean; message: string }> {
      const { pub, rev, identity } = await load(deps.db, deps.objects, publicationId);
      const python = await pythonOf(pub);
      return scratch(async (dir) => {
        if (!(await writeTree(deps.objects, rev.tree, path.join(dir, 'lab')))) return { ok: false, message: 'stored revision content does not match its digests' };
        return smokeRun(deps.sandbox, python, dir, { inputs, seed: 0, ...identity }, 600);
      });
    },

    async failPublication(publicationId: string, findings: Finding[]): Promise<void> {
      await failPublication(deps.db, publicationId, findings);
    },

    /** Records the immutable release and its capability, once (retries find it done). */
    async recordRelease(publicationId: string, packed: PackResult, qualification: 'smoke_tested' | 'unqualified'): Promise<string> {
      return deps.db.transaction(async (trx) => {
        const pub = (await getPublication(trx, publicationId, { forUpdate: true }))!;
        if (pub.release_id) return pub.release_id;
        const rev = (await getRevisionById(trx, pub.revision_id))!;
        const lab = (await getLabById(trx, pub.lab_id))!;
        const manifest = parseManifestText((await deps.objects.getBytes(blobKey(rev.tree['lab.yaml']!.sha256))).toString('utf8'));
        const release = await insertRelease(trx, {
          account_id: pub.account_id, namespace: pub.namespace, name: pub.name, version: pub.version,
          title: textOr(manifest.title, lab.title), description: textOr(manifest.description, lab.description), manifest, ...contractOf(manifest),
          package_sha256: packed.package_sha256, archive_key: packed.archive_key, files: packed.files, tree: rev.tree,
          visibility: lab.visibility, hub_listed: lab.hub_listed, ...hubIndexOf(manifest), qualification_state: qualification, runtime_problems: packed.runtime_problems,
          environment_lock_sha256: pub.environment_lock_sha256,
        });
        await markPublished(trx, publicationId, release.id);
        return release.id;
      });
    },
  };
}

export type PublicationActivities = ReturnType<typeof createPublicationActivities>;

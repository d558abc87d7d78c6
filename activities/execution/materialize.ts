import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import type { RunRow } from '../../storage/db/runs.ts';
import { getReleaseById } from '../../storage/db/releases.ts';
import { getRevisionById } from '../../storage/db/workspaces.ts';
import { sha256Hex } from '../../storage/digest.ts';
import { parseManifestText } from '../../storage/labManifests.ts';
import { packerIdentity } from '../../storage/labIdentity.ts';
import type { Tree } from '../../storage/trees.ts';
import { writeTree } from './labFiles.ts';

/** What a run executes, put on the worker's disk: its entry there, its manifest and tree, and what the driver is told of it. */
export interface RunSource { entry: string; manifest: any; tree: Tree; request: Record<string, unknown> }

/**
 * Puts what a run executes in `dir` (shown read-only to the lab), every byte checked
 * against its content address: a release's archive, or a managed run's revision tree as
 * a lab folder.
 */
export async function materialize(deps: { db: Db; objects: ObjectStore }, run: RunRow, dir: string): Promise<RunSource | { error: { code: string; message: string } }> {
  const mismatch = { error: { code: 'artifact_store_error', message: 'Stored lab content does not match its digest.' } };
  await mkdir(dir, { recursive: true });
  if (run.kind === 'hub') {
    const release = await getReleaseById(deps.db, run.release_id!);
    if (!release?.archive_key) return mismatch;
    const bytes = await deps.objects.getBytes(release.archive_key);
    if (`blobs/sha256/${sha256Hex(bytes)}` !== release.archive_key) return mismatch;
    await writeFile(path.join(dir, 'lab.bsilab'), bytes);
    return { entry: 'lab.bsilab', manifest: release.manifest, tree: release.tree ?? {}, request: { package_sha256: run.package_sha256 } };
  }
  const rev = (await getRevisionById(deps.db, run.revision_id!))!;
  if (!(await writeTree(deps.objects, rev.tree, path.join(dir, 'lab')))) return mismatch;
  const manifest = parseManifestText(await readFile(path.join(dir, 'lab', 'lab.yaml'), 'utf8'));
  const [ns, name] = run.resolved_ref.split('@')[0]!.split('/');
  // A lab that declares its own package/version is packed under them; others under its Silico name.
  return { entry: 'lab', manifest, tree: rev.tree, request: packerIdentity(manifest, { package: `${ns}/${name}`, version: `0.0.${rev.number}` }) };
}


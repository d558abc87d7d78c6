import { parseManifestText } from '../../storage/labManifests.ts';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { blobKey } from '../../storage/objects.ts';
import { createAccount, findAccountByNamespace } from '../../storage/db/accounts.ts';
import { insertRelease, releaseExists } from '../../storage/db/releases.ts';
import { REPO_ROOT } from './paths.ts';
import { labManifestProblems } from '../../api/schemas/labManifest.ts';
import { contractOf, hubIndexOf } from '../../storage/labContract.ts';
import type { Tree } from '../../storage/trees.ts';
import { packLab } from '../../activities/execution/packLab.ts';
import type { Sandbox } from '../../activities/execution/sandbox.ts';
import { packerIdentity } from '../../storage/labIdentity.ts';
import { readLabManifests } from '../../storage/labManifests.ts';
import { readRuntimeLock, runtimePinFindings, runtimeProblems } from '../../storage/runtimePins.ts';

export const PLATFORM_NAMESPACE = 'platform';
export const BUILTIN_VERSION = '1.0.0';

const SKIP = /(^|\/)(__pycache__|\.pytest_cache|\.git|\.venv|dist)(\/|$)|\.pyc$/;

/** The lab folder's files as a content-addressed tree (each blob stored once). */
async function sourceTree(objects: ObjectStore, dir: string): Promise<Tree> {
  const tree: Tree = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const rel = path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/');
    if (SKIP.test(rel)) continue;
    const bytes = await readFile(path.join(dir, rel));
    tree[rel] = { sha256: await objects.putBlob(bytes), size: bytes.length };
  }
  return tree;
}

/**
 * Packs one lab folder with the runtime's packer and records it as an immutable release
 * `<namespace>/<name>@<version>`: the archive stored by sha256, the contract and the
 * logical package digest in Postgres.
 */
export async function publishLab(
  db: Db, objects: ObjectStore, packer: { python: string; sandbox: Sandbox },
  lab: { dir: string; accountId: string; namespace: string; name: string; version: string; visibility: 'private' | 'team' | 'public'; hubListed?: boolean },
) {
  const tmp = await mkdtemp(path.join(tmpdir(), 'silico-pack-'));
  try {
    const manifest = parseManifestText(await readFile(path.join(lab.dir, 'lab.yaml'), 'utf8'));
    const identity = packerIdentity(manifest, { package: `${lab.namespace}/${lab.name}`, version: lab.version });
    const packed = await packLab(packer.sandbox, packer.python, lab.dir, path.join(tmp, 'pack'), identity);
    const archiveSha = await objects.putBlob(await readFile(packed.archive), 'application/zip');
    const tree = await sourceTree(objects, lab.dir);
    // Recorded for hub_inspect; run plans re-check the pins from the tree against the current lock.
    const pins = runtimePinFindings(readRuntimeLock(), await readLabManifests(objects, tree, manifest));
    const problems = labManifestProblems(manifest);
    if (problems.length) throw new Error(`${lab.dir}/lab.yaml: ${problems.join('; ')}`);
    return await insertRelease(db, {
      account_id: lab.accountId, namespace: lab.namespace, name: lab.name, version: lab.version,
      title: manifest.title ?? lab.name, description: manifest.description ?? '', manifest, ...contractOf(manifest),
      package_sha256: packed.package_sha256, archive_key: blobKey(archiveSha), visibility: lab.visibility, hub_listed: lab.hubListed ?? false, ...hubIndexOf(manifest),
      runtime_problems: runtimeProblems(pins), files: packed.files, tree,
      // A release whose declared smoke inputs run is smoke-tested; the built-ins are checked by their own tests.
      qualification_state: 'unqualified',
    });
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Publishes every lab under labs/ as `platform/<name>@1.0.0`, once (releases are immutable). */
export async function publishBuiltinLabs(db: Db, objects: ObjectStore, packer: { python: string; sandbox: Sandbox }, log: (l: string) => void): Promise<string[]> {
  let account = await findAccountByNamespace(db, PLATFORM_NAMESPACE);
  account ??= (await createAccount(db, { namespace: PLATFORM_NAMESPACE, kind: 'team', displayName: 'Silico platform' })).account;
  const root = path.join(REPO_ROOT, 'labs');
  const published: string[] = [];
  for (const name of (await readdir(root)).sort()) {
    const dir = path.join(root, name);
    if (!existsSync(path.join(dir, 'lab.yaml'))) continue;
    const exists = await releaseExists(db, { namespace: PLATFORM_NAMESPACE, name, version: BUILTIN_VERSION });
    if (exists) continue;
    await publishLab(db, objects, packer, { dir, accountId: account.id, namespace: PLATFORM_NAMESPACE, name, version: BUILTIN_VERSION, visibility: 'public', hubListed: true });
    published.push(`${PLATFORM_NAMESPACE}/${name}@${BUILTIN_VERSION}`);
  }
  if (published.length) log(`built-in labs published: ${published.join(', ')}`);
  return published;
}

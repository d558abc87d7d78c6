import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { blobKey } from '../../storage/objects.ts';
import { createAccount, findAccountByNamespace } from '../../storage/db/accounts.ts';
import { insertRelease } from '../../storage/db/releases.ts';
import { REPO_ROOT } from './paths.ts';

const run = promisify(execFile);
export const PLATFORM_NAMESPACE = 'platform';
export const BUILTIN_VERSION = '1.0.0';
const PACK = path.join(REPO_ROOT, 'activities/execution/pack.py');

interface IoEntry { name: string; maps_to: string; value_type?: string; required?: boolean; public?: boolean }

/** The service contract of a lab.yaml: inputs and outputs with their value types. */
export function contractOf(manifest: { io?: { inputs?: IoEntry[]; outputs?: IoEntry[] } }) {
  return {
    inputs: (manifest.io?.inputs ?? []).map((i) => ({ name: i.name, value_type: i.value_type ?? 'object', required: i.required ?? false })),
    outputs: (manifest.io?.outputs ?? []).map((o) => ({ name: o.name, value_type: o.value_type ?? 'object' })),
  };
}

/**
 * Publishes every lab under labs/ as `platform/<name>@1.0.0`, once: packed with the
 * runtime's packer, the archive stored by sha256, the release recorded public with its
 * contract and logical package digest. Existing releases are left as they are
 * (releases are immutable).
 */
export async function publishBuiltinLabs(db: Db, objects: ObjectStore, python: string, log: (l: string) => void): Promise<string[]> {
  let account = await findAccountByNamespace(db, PLATFORM_NAMESPACE);
  account ??= (await createAccount(db, { namespace: PLATFORM_NAMESPACE, kind: 'team', displayName: 'Silico platform' })).account;
  const root = path.join(REPO_ROOT, 'labs');
  const published: string[] = [];
  for (const name of (await readdir(root)).sort()) {
    const dir = path.join(root, name);
    if (!existsSync(path.join(dir, 'lab.yaml'))) continue;
    const exists = await db('releases').where({ namespace: PLATFORM_NAMESPACE, name, version: BUILTIN_VERSION }).first('id');
    if (exists) continue;
    const tmp = await mkdtemp(path.join(tmpdir(), 'silico-pack-'));
    try {
      const { stdout } = await run(python, [PACK, dir, path.join(tmp, `${name}.bsilab`), `${PLATFORM_NAMESPACE}/${name}`, BUILTIN_VERSION]);
      const packed = JSON.parse(stdout.trim().split('\n').pop()!) as { archive: string; package_sha256: string };
      const bytes = await readFile(packed.archive);
      const archiveSha = await objects.putBlob(bytes, 'application/zip');
      const manifest = YAML.parse(await readFile(path.join(dir, 'lab.yaml'), 'utf8'));
      await insertRelease(db, {
        account_id: account.id, namespace: PLATFORM_NAMESPACE, name, version: BUILTIN_VERSION,
        title: manifest.title ?? name, description: manifest.description ?? '', manifest, ...contractOf(manifest),
        package_sha256: packed.package_sha256, archive_key: blobKey(archiveSha), visibility: 'public', tags: manifest.tags ?? [],
      });
      published.push(`${PLATFORM_NAMESPACE}/${name}@${BUILTIN_VERSION}`);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }
  if (published.length) log(`built-in labs published: ${published.join(', ')}`);
  return published;
}

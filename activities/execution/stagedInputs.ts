import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { HashingStream } from '../../storage/digest.ts';
import { getFile, type FileRow } from '../../storage/db/files.ts';
import { filesById, getDataset } from '../../storage/db/datasets.ts';
import type { Member } from '../../storage/datasets.ts';
import { referenceInputs } from '../../storage/labInputs.ts';

/** What a staged file input becomes for the lab: where to read it, and what it is. */
export interface FileHandle { path: string; name: string; sha256: string; size_bytes: number }

type Staged = { values: (inputRoot: string) => Record<string, unknown> } | { error: { code: string; message: string } };

/** A file name safe to write anywhere (the stored one is the caller's text). */
function safeName(name: string): string {
  const s = name.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '');
  return s.slice(0, 120) || 'file';
}

/** Writes a stored file's bytes to `to`, re-hashing them: false when they are not what was recorded. */
async function stageFile(objects: ObjectStore, f: FileRow, to: string): Promise<boolean> {
  await mkdir(path.dirname(to), { recursive: true });
  const { body } = await objects.getStream(f.object_key);
  const hash = new HashingStream();
  await pipeline(body, hash, createWriteStream(to, { mode: 0o644 }));
  return hash.digest() === f.sha256 && hash.bytes === Number(f.size_bytes);
}

/**
 * Stages a run's `file` and `dataset` inputs under `dir/files` and `dir/datasets` (the
 * sandbox shows `dir` read-only), checked again now: still the run owner's, bytes that
 * hash to what was recorded. The lab then gets, for a file, `{path, name, sha256,
 * size_bytes}`, and for a dataset `{path, manifest, name, version}` with its members
 * under `path/<split>/`; `values` takes the root at which the lab sees `dir`.
 */
export async function stageInputs(deps: { db: Db; objects: ObjectStore }, run: { account_id: string; inputs: Record<string, unknown> }, manifest: unknown, dir: string): Promise<Staged> {
  const unavailable = (name: string, why: string) => ({ error: { code: 'input_unavailable', message: `Input ${name} ${why}; nothing ran.` } });
  const relative: Record<string, unknown> = {};
  for (const { name, kind } of referenceInputs(manifest)) {
    const id = run.inputs[name];
    if (typeof id !== 'string') continue;
    if (kind === 'file') {
      const f = await getFile(deps.db, id, run.account_id);
      if (!f) return unavailable(name, 'is no longer one of the account\'s files');
      const rel = path.join('files', safeName(name), safeName(f.name));
      if (!(await stageFile(deps.objects, f, path.join(dir, rel)))) return unavailable(name, 'has stored bytes that no longer match their digest');
      relative[name] = { rel, name: f.name, sha256: f.sha256, size_bytes: Number(f.size_bytes) };
      continue;
    }
    const d = await getDataset(deps.db, id, run.account_id);
    if (!d || d.status !== 'registered') return unavailable(name, 'is no longer a registered dataset of the account');
    const members = d.manifest.members as Member[];
    const files = await filesById(deps.db, run.account_id, members.map((m) => m.file_id));
    const rel = path.join('datasets', safeName(name));
    for (const m of members) {
      const f = files.get(m.file_id);
      if (!f || f.sha256 !== m.sha256) return unavailable(name, `has a member (${m.file_id}) that is no longer the file it was`);
      if (!(await stageFile(deps.objects, f, path.join(dir, rel, safeName(m.split), `${f.id}-${safeName(f.name)}`)))) {
        return unavailable(name, `has a member (${m.file_id}) whose stored bytes no longer match their digest`);
      }
    }
    await writeFile(path.join(dir, rel, 'manifest.json'), `${JSON.stringify(d.manifest, null, 2)}\n`, { mode: 0o644 });
    relative[name] = { rel, manifest: path.join(rel, 'manifest.json'), name: d.name, version: d.version };
  }
  return {
    values: (root) => {
      const values: Record<string, unknown> = { ...run.inputs };
      for (const [name, v] of Object.entries(relative) as Array<[string, { rel: string; manifest?: string } & Record<string, unknown>]>) {
        const { rel, manifest: m, ...rest } = v;
        values[name] = { path: path.join(root, rel), ...(m ? { manifest: path.join(root, m) } : {}), ...rest };
      }
      return values;
    },
  };
}

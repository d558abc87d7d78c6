import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { Db } from '../../storage/db/knex.ts';
import { blobKey, type ObjectStore } from '../../storage/objects.ts';
import { recordArtifact } from '../../storage/db/runs.ts';
import { newId } from '../../storage/ids.ts';
import type { ArtifactFile } from './outputs.ts';

/** Files at most this big are sent in one request; larger ones are streamed in parts. */
const SINGLE_PUT_BYTES = 8 << 20;

/** An artifact file's bytes in the object store under their content address (once). */
export async function putArtifactBytes(objects: ObjectStore, f: ArtifactFile): Promise<void> {
  const key = blobKey(f.sha256);
  // A small file is put as it is (the same bytes under the same address: harmless); a
  // large one is looked for first and streamed only when missing.
  if (f.size_bytes <= SINGLE_PUT_BYTES) await objects.putObject(key, 'bytes' in f ? f.bytes : await readFile(f.path), f.content_type);
  else if (!(await objects.exists(key))) await objects.putStream(key, 'bytes' in f ? Readable.from([f.bytes]) : createReadStream(f.path), f.content_type);
}

/** A file stored as the run's artifact (once: a retry's same file is the same record), its storing said in the run's events; its id. */
export async function storeRunArtifact(deps: { db: Db; objects: ObjectStore }, runId: string, f: ArtifactFile): Promise<string> {
  await putArtifactBytes(deps.objects, f);
  const rec = await recordArtifact(deps.db, runId, newId('art'), {
    role: f.role, file_name: f.file_name, content_type: f.content_type, format: f.format, size_bytes: f.size_bytes, sha256: f.sha256, public: f.public,
  });
  return rec.id;
}

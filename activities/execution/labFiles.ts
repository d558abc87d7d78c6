import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ObjectStore } from '../../storage/objects.ts';
import { blobKey } from '../../storage/objects.ts';
import { sha256Hex } from '../../storage/digest.ts';

/**
 * Writes a content-addressed tree as files under `dir`, re-hashing every blob: bytes that
 * do not match their address are never handed to the runtime. Returns false on a mismatch.
 */
export async function writeTree(objects: ObjectStore, tree: Record<string, { sha256: string }>, dir: string): Promise<boolean> {
  for (const [p, f] of Object.entries(tree)) {
    const bytes = await objects.getBytes(blobKey(f.sha256));
    if (sha256Hex(bytes) !== f.sha256) return false;
    await mkdir(path.dirname(path.join(dir, p)), { recursive: true });
    await writeFile(path.join(dir, p), bytes);
  }
  return true;
}

import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { processTag } from '../workerScratch.ts';

const run = promisify(execFile);
const LOCK_DIGEST = /^[0-9a-f]{64}$/;

/** Where the cache keeps what it knows of each environment: its size, and when it was last used. */
const metaDir = (dir: string) => path.join(dir, '.meta');

/** Records a built environment's size (measured once, after its build). */
export async function recordBuilt(dir: string, sha256: string): Promise<number> {
  const { stdout } = await run('du', ['-sb', path.join(dir, sha256)]);
  const bytes = Number(stdout.split('\t')[0]);
  await mkdir(metaDir(dir), { recursive: true, mode: 0o700 });
  await writeFile(path.join(metaDir(dir), `${sha256}.size`), String(bytes));
  return bytes;
}

/** Marks an environment used now (eviction takes the least recently used first). */
export async function touchUsed(dir: string, sha256: string): Promise<void> {
  const file = path.join(metaDir(dir), `${sha256}.size`);
  const now = new Date();
  await utimes(file, now, now).catch(() => undefined);
}

/**
 * Keeps the built environments within `maxBytes`: the least recently used go first,
 * never one in `held` (a queued or running run's, a live hosting's, one this process is
 * using). Each is renamed aside before it is removed, so nothing ever sees half of one.
 * Returns the digests removed.
 */
export async function evictEnvironments(dir: string, maxBytes: number, held: Set<string>): Promise<string[]> {
  const entries = (await readdir(dir).catch(() => [] as string[])).filter((e) => LOCK_DIGEST.test(e));
  const known = await Promise.all(entries.map(async (sha256) => {
    const file = path.join(metaDir(dir), `${sha256}.size`);
    // One built before sizes were kept is measured now.
    const bytes = await readFile(file, 'utf8').then(Number).catch(() => recordBuilt(dir, sha256));
    const used = await stat(file).then((s) => s.mtimeMs).catch(() => 0);
    return { sha256, bytes, used };
  }));
  let total = known.reduce((n, e) => n + e.bytes, 0);
  const removed: string[] = [];
  for (const e of known.sort((a, b) => a.used - b.used)) {
    if (total <= maxBytes) break;
    if (held.has(e.sha256)) continue;
    const aside = path.join(dir, `.evicted-${e.sha256}-${processTag()}`);
    // Another worker of this host may have taken it first.
    if (!(await rename(path.join(dir, e.sha256), aside).then(() => true, () => false))) continue;
    await rm(path.join(metaDir(dir), `${e.sha256}.size`), { force: true });
    await rm(aside, { recursive: true, force: true });
    total -= e.bytes;
    removed.push(e.sha256);
  }
  return removed;
}

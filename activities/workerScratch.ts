import { readFileSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';

/**
 * What a SIGKILLed worker leaves on its machine: the temporary directories its activities
 * made (a run's, a warm parent's, a deployment's, a publication's...) and its environment
 * builds' work folders. The activities make theirs with mkdtemp in os.tmpdir() and never
 * name their process, and several workers, api processes and test processes share one
 * machine's /tmp: by prefix or age alone, a live worker's directory cannot be told from a
 * dead one's. So each worker process keeps its temporary directories under a root of its
 * own, `silico-worker-<pid>-<start>`, and points TMPDIR there; a starting worker removes
 * the roots whose process is gone. A pid is checked with the kernel's start time of it, so
 * a pid reused by another process does not keep a dead worker's root, nor does a restarted
 * worker inherit one. Anything not named so is left alone.
 */

const ROOT = /^silico-worker-(\d+)-(\d+)$/;
/** An environment build's work folder, named by its worker (activities/environments/build.ts), and an eviction set aside (cache.ts). */
const ENVIRONMENT_LEFTOVER = /^\.(?:work-[0-9a-f]{12}|evicted-[0-9a-f]{64})-(\d+)-(\d+)(?:-[A-Za-z0-9]+)?$/;

/** The kernel's start time of a process (clock ticks since boot), or null when it is gone or /proc does not say. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command's closing parenthesis: the state is the 3rd, the start time the 22nd.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** A process on this machine, `<pid>-<start>` (the start 0 where /proc does not say). */
export function tagOf(pid: number): string {
  return `${pid}-${startTime(pid) ?? 0}`;
}

let own: string | undefined;
/** This process's tag: what names its scratch root and its environment builds' work folders. */
export function processTag(): string {
  own ??= tagOf(process.pid);
  return own;
}

/** Whether the process a tag names still runs (where /proc is absent, whether its pid does). */
export function tagAlive(pid: number, start: string): boolean {
  const now = startTime(pid);
  if (now !== null) return now === start;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes this process's scratch root in `base` and points TMPDIR at it, so every mkdtemp
 * in os.tmpdir() of this process lands there. Traversable by the sandboxes' uids, listable
 * by no one else. Returns it.
 */
export async function claimScratchRoot(base: string): Promise<string> {
  const root = path.join(base, `silico-worker-${processTag()}`);
  await mkdir(root, { recursive: true, mode: 0o711 });
  process.env.TMPDIR = root;
  return root;
}

/**
 * Removes the scratch roots in `base` and the environment builds' leftovers in
 * `environmentsDir` of workers that are gone; returns the paths removed.
 */
export async function clearDeadWorkers(base: string, environmentsDir: string): Promise<string[]> {
  const removed: string[] = [];
  for (const [dir, pattern] of [[base, ROOT], [environmentsDir, ENVIRONMENT_LEFTOVER]] as const) {
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      const m = pattern.exec(name);
      if (!m || tagAlive(Number(m[1]), m[2]!)) continue;
      await rm(path.join(dir, name), { recursive: true, force: true });
      removed.push(path.join(dir, name));
    }
  }
  return removed;
}

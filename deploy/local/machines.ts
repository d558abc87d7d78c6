import { chmod, mkdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * The cluster topology's workers as machines of their own, on one host. A deployment's
 * worker pods (deploy/k8s/worker.yaml) share Temporal, Postgres and the object store and
 * nothing else: each has its own scratch (`/tmp`), its own environments folder at the
 * path the image names, its own home and caches, its own host name. Here each worker
 * process gets the same: its own folders under `<dataDir>/machines/<name>/`, seen by it
 * (and by the sandboxes it starts) at paths every worker names alike,
 * `<dataDir>/machine/{tmp,environments,home}`, through a mount namespace of its own, as a
 * container's volumes are. Since the paths are alike, an environment one worker built has
 * the same layout digest on the other (activities/environments/shared.ts) and is taken from
 * the object store, not from a shared disk. `<dataDir>/machines` itself is hidden from every
 * worker, so none can reach another's files.
 *
 * What stays common is what one image gives every pod, read-only: the code and
 * node_modules, the lab runtime and the service's Python environments, uv, the base
 * interpreters, the workflow bundle and the passport keyring (a mounted secret in a
 * deployment). The one thing a host cannot give each machine alone is its user ids, so
 * each machine's sandboxes take their own share of the uid range: a uid is what a
 * sandbox's process count is kept against.
 *
 * Namespaces need root (as bubblewrap's host uids do). Without root, each worker is
 * pointed at its own folders by their own paths: nothing is shared on disk, but an
 * environment is then of another layout on each and is built by each.
 */
export interface WorkerMachine {
  name: string;
  /** The machine's own disk, as the host sees it. */
  root: string;
  /** Its environments folder, as the host sees it (where `environments/<lock>` of its builds land). */
  environmentsDir: string;
  /** The environment its worker process starts with (over the stack's). */
  env: Record<string, string>;
  /** The command that starts `command args` on this machine. */
  wrap(command: string, args: string[]): { command: string; args: string[] };
}

/** What each machine's mount namespace does before the worker starts: its folders at the common paths, the others' hidden, its host name. */
const ENTER = [
  'set -e',
  'mount --bind "$1/tmp" "$2/tmp"',
  'mount --bind "$1/environments" "$2/environments"',
  'mount --bind "$1/home" "$2/home"',
  'mount -t tmpfs -o size=64k,mode=0755 silico-machines "$3"',
  'hostname "$4"',
  'shift 4',
  'exec "$@"',
].join('\n');

/**
 * Machine `index` (0-based) of `count` worker machines of the stack in `dataDir`: makes its
 * folders and says how its worker starts. `uids` is the stack's sandbox uid range, split
 * evenly between the machines.
 */
export async function workerMachine(dataDir: string, index: number, count: number, uids: { base: number; count: number }): Promise<WorkerMachine> {
  const name = `worker-${index + 1}`;
  const machines = path.join(dataDir, 'machines');
  const root = path.join(machines, name);
  const common = path.join(dataDir, 'machine');
  const isolated = process.getuid?.() === 0;
  const seen = isolated ? common : root;
  for (const dir of ['tmp', 'environments', 'home']) {
    await mkdir(path.join(root, dir), { recursive: true });
    if (isolated) await mkdir(path.join(common, dir), { recursive: true });
  }
  // Scratch as /tmp is: anyone may make a folder in it, only its owner remove it.
  await chmod(path.join(root, 'tmp'), 0o1777);
  for (const dir of [root, path.join(root, 'environments'), ...(isolated ? [common, path.join(common, 'tmp'), path.join(common, 'environments')] : [])]) await chmod(dir, 0o755);
  const share = Math.floor(uids.count / count);
  const home = path.join(seen, 'home');
  const env = {
    TMPDIR: path.join(seen, 'tmp'),
    SILICO_ENVIRONMENTS_DIR: path.join(seen, 'environments'),
    HOME: home,
    XDG_CACHE_HOME: path.join(home, '.cache'),
    NODE_COMPILE_CACHE: path.join(home, '.cache', 'node-compile-cache'),
    SILICO_SANDBOX_UID_BASE: String(uids.base + index * share),
    SILICO_SANDBOX_UID_COUNT: String(share),
  };
  return {
    name, root, environmentsDir: path.join(root, 'environments'), env,
    wrap: (command, args) => (isolated
      ? { command: 'unshare', args: ['--mount', '--uts', '--propagation', 'private', '--', '/bin/sh', '-c', ENTER, name, root, common, machines, name, command, ...args] }
      : { command, args }),
  };
}

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findExecutable } from '../../activities/execution/sandbox.ts';
import { findPgBin } from './postgres.ts';
import { runtimeLock, runtimePython } from './runtime.ts';

const run = promisify(execFile);

/** A system package the stack or the suite needs, how to tell it is there, and Debian's name for it. */
export interface Prerequisite {
  what: string;
  /** Debian packages that provide it. */
  packages: string[];
  present(): Promise<boolean>;
}

/** Present when `exe` is on PATH. */
export const onPath = (exe: string) => async () => findExecutable(exe) !== null;

/** The lab runtime's interpreter (the version its lock names) with the venv module; see runtime.ts. */
async function pythonPresent(env: NodeJS.ProcessEnv): Promise<boolean> {
  const python = await runtimePython(env);
  if (!python) return false;
  return run(python, ['-c', 'import ensurepip, venv']).then(() => true, () => false);
}

/**
 * What `npm start` (and so `npm test`) needs on the machine, given its environment;
 * `ownPostgres`: the stack runs a cluster of its own (no DATABASE_URL, or a test stack).
 */
export async function stackPrerequisites(env: NodeJS.ProcessEnv, ownPostgres: boolean): Promise<Prerequisite[]> {
  const out: Prerequisite[] = [];
  if (ownPostgres) {
    // The `postgresql` package also makes the `postgres` system user that owns a root's cluster.
    out.push({ what: 'the Postgres server binaries (initdb, postgres)', packages: ['postgresql'], present: async () => findPgBin(env) !== undefined });
  }
  if (!env.SILICO_PYTHON) {
    const { python } = await runtimeLock();
    out.push({ what: `Python ${python} with its venv module (the lab runtime's lock names it)`, packages: [`python${python}`, `python${python}-venv`], present: () => pythonPresent(env) });
  }
  if (env.SILICO_UNSAFE_NO_SANDBOX !== '1') {
    out.push({ what: 'bubblewrap, the sandbox every lab runs in', packages: ['bubblewrap'], present: onPath(env.SILICO_SANDBOX_BWRAP || 'bwrap') });
    const filterPython = env.SILICO_SANDBOX_FILTER_PYTHON || '/usr/bin/python3';
    out.push({
      what: "libseccomp's Python bindings, which compile the labs' system-call filter", packages: ['python3-seccomp'],
      present: () => run(filterPython, ['-c', 'import seccomp']).then(() => true, () => false),
    });
  }
  return out;
}

/** What the suite needs beyond the stack: the browser tests' chromium, the cluster's balancer, the guides' jq and OpenSSL. */
export const SUITE_PREREQUISITES: Prerequisite[] = [
  { what: 'chromium, for the console\'s browser tests', packages: ['chromium'], present: onPath('chromium') },
  { what: 'HAProxy, the balancer of the cluster topology', packages: ['haproxy'], present: onPath('haproxy') },
  { what: 'jq and OpenSSL, which the guides\' snippets use as a reader would', packages: ['jq', 'openssl'], present: onPath('jq') && onPath('openssl') },
];

/**
 * Makes every prerequisite present before anything starts: what is missing is installed
 * with apt-get in one go when this process is root (a fresh CI machine); whatever is
 * still missing then (not root, no apt, or a package this Debian does not have) fails at
 * once with one message naming each thing and the one command that installs them all.
 */
export async function ensurePrerequisites(list: Prerequisite[], say: (l: string) => void): Promise<void> {
  const missing = async () => (await Promise.all(list.map(async (p) => ((await p.present()) ? null : p)))).filter((p): p is Prerequisite => p !== null);
  let absent = await missing();
  if (!absent.length) return;
  const packages = [...new Set(absent.flatMap((p) => p.packages))];
  if (process.getuid?.() === 0 && findExecutable('apt-get')) {
    say(`installing ${packages.join(' ')} with apt-get`);
    const apt = (args: string[]) => run('apt-get', args, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 64 << 20 });
    // The package lists of a fresh machine may be stale or absent: refresh once and retry.
    await apt(['install', '-y', '-qq', '--no-install-recommends', ...packages])
      .catch(() => apt(['update', '-qq']).then(() => apt(['install', '-y', '-qq', '--no-install-recommends', ...packages])))
      .catch((err: { stderr?: string }) => say(`apt-get could not install them: ${String(err.stderr ?? err).trim().split('\n').slice(-3).join(' | ')}`));
    absent = await missing();
    if (!absent.length) return;
  }
  const still = [...new Set(absent.flatMap((p) => p.packages))];
  throw new Error(`missing on this machine:\n${absent.map((p) => `  - ${p.what}`).join('\n')}\ninstall them with:\n  sudo apt-get install ${still.join(' ')}`);
}

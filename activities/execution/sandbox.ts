import { accessSync, constants, realpathSync } from 'node:fs';
import { chown, mkdir, mkdtemp } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SandboxSettings } from '../../kernel/sandboxSettings.ts';

/**
 * The sandbox every lab process runs in (runs, publication smoke runs, packing): bubblewrap
 * gives it new mount, PID, network, IPC and UTS namespaces, a filesystem of only the
 * system's /usr, the runtime, the trusted script, its input (read-only) and its scratch
 * directory (writable), a private /tmp, a new session, and death with its parent. Inside,
 * prlimit sets the resource limits and setpriv drops to the run's own unprivileged
 * uid/gid with no capabilities and `no_new_privs` before the interpreter starts. Every
 * process of it runs under a system-call filter (syscallFilter.py) bubblewrap loads. The
 * trusted script is shown at /opt/silico, with forkserve.py, the module of warm instances
 * our scripts share, beside it.
 *
 * Fail closed: when bubblewrap is missing or cannot build the sandbox, the lab does not
 * run (`sandbox_unavailable`). The only way around it is `SILICO_UNSAFE_NO_SANDBOX=1`,
 * for local development, and every process started that way says so.
 */


export interface SandboxLimits {
  /** Address space of each process (RLIMIT_AS). */
  memoryBytes: number;
  /** CPU seconds (RLIMIT_CPU soft; SIGKILL 5 s later). */
  cpuSeconds: number;
  /** Processes and threads of the sandbox's user (RLIMIT_NPROC). */
  processes: number;
  openFiles: number;
  /** Largest file it may write (RLIMIT_FSIZE). */
  fileSizeBytes: number;
  /** Size of its private /tmp. */
  tmpBytes: number;
  /**
   * Size of its scratch directory, a filesystem of that size private to the sandbox (the
   * worker reads nothing back from it); without it, the scratch is the host directory
   * `spec.scratch`, for a program whose files the worker takes afterwards (packing).
   */
  scratchBytes?: number;
  /** Memory of all its processes together (their proportional set size), watched by the worker. */
  labMemoryBytes?: number;
}

/** Where the sandboxed program finds its two directories. */
export interface SandboxPaths { input: string; scratch: string }

export interface SandboxSpec {
  python: string;
  /** A trusted script of ours (driver.py, pack.py), mounted read-only. */
  script: string;
  args: (paths: SandboxPaths) => string[];
  /** Host directory shown read-only at /input. */
  input: string;
  /** Host directory shown writable at /scratch (created here and given to the sandbox's user). */
  scratch: string;
  limits: SandboxLimits;
  env: Record<string, string>;
  /**
   * Further host paths shown at their own paths: read-only, and writable (given to the
   * sandbox's user). An environment build's only: labs see nothing but the above.
   */
  binds?: { ro?: string[]; rw?: string[] };
  /** A host Unix socket shown at `inside`: an environment build's one way to its package index. */
  socket?: { host: string; inside: string };
}

export interface SandboxedCommand {
  command: string;
  args: string[];
  /** The environment to start `command` with (bubblewrap sets the lab's own inside). */
  env: Record<string, string>;
  /** Paths as the program sees them. */
  paths: SandboxPaths;
  unsafe: boolean;
  /** The compiled system-call filter, handed to bubblewrap on FILTER_FD. */
  filter?: string;
  /** Gives the sandbox's uid back once its process has exited. */
  release(): void;
}

/** The sandbox could not be made: the lab must not run. */
export class SandboxUnavailable extends Error {
  readonly code = 'sandbox_unavailable';
}

const INSIDE: SandboxPaths = { input: '/input', scratch: '/scratch' };
/** The file descriptor bubblewrap reports the sandbox's init pid on (labProcess.ts opens it). */
export const INFO_FD = 4;
/** The file descriptor bubblewrap reads the compiled system-call filter from. */
export const FILTER_FD = 5;
const FILTER_SOURCE = fileURLToPath(new URL('./syscallFilter.py', import.meta.url));
const SCRIPT_DIR = '/opt/silico';
/** The warm instances' serving (forkserve.py), mounted beside every trusted script, which may import it. */
const FORKSERVE = fileURLToPath(new URL('./forkserve.py', import.meta.url));

/** Resolves a command name on PATH (or checks a path), as an executable file. */
export function findExecutable(name: string, envPath = process.env.PATH ?? ''): string | null {
  const candidates = name.includes('/') ? [name] : envPath.split(':').filter(Boolean).map((d) => path.join(d, name));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // next
    }
  }
  return null;
}

/**
 * Builds sandboxed commands. One per worker process: it hands out the host uids, so two
 * concurrent labs never share a user (nor the process count RLIMIT_NPROC is kept against).
 */
export function createSandbox(settings: SandboxSettings) {
  const inUse = new Set<number>();
  const root = process.getuid?.() === 0;

  const takeUid = (): number => {
    for (let i = 0; i < settings.uidCount; i++) {
      const uid = settings.uidBase + i;
      if (!inUse.has(uid)) {
        inUse.add(uid);
        return uid;
      }
    }
    throw new SandboxUnavailable(`all ${settings.uidCount} sandbox uids are in use`);
  };

  // Compiled once per worker; a worker that cannot compile it runs no lab (fail closed).
  let filter: Promise<string> | undefined;
  const compileFilter = async (): Promise<string> => {
    const out = path.join(await mkdtemp(path.join(tmpdir(), 'silico-filter-')), 'syscalls.bpf');
    try {
      await promisify(execFile)(settings.filterPython, [FILTER_SOURCE, out]);
    } catch (err) {
      filter = undefined;
      throw new SandboxUnavailable(`cannot compile the lab's system-call filter with ${settings.filterPython} (${String((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n').pop()}); install libseccomp's Python bindings (apt-get install python3-seccomp)`);
    }
    return out;
  };

  const limitArgs = (l: SandboxLimits) => [
    `--as=${l.memoryBytes}`, `--cpu=${l.cpuSeconds}:${l.cpuSeconds + 5}`, `--nproc=${l.processes}`,
    `--nofile=${l.openFiles}`, `--fsize=${l.fileSizeBytes}`, '--core=0',
  ];

  return {
    settings,

    /** The command line that runs `spec` sandboxed; throws SandboxUnavailable when it cannot be. */
    async command(spec: SandboxSpec): Promise<SandboxedCommand> {
      if (settings.unsafeNoSandbox) {
        await mkdir(spec.scratch, { recursive: true });
        const paths = { input: spec.input, scratch: spec.scratch };
        return {
          command: '/usr/bin/prlimit', args: [...limitArgs(spec.limits), '--', spec.python, '-u', spec.script, ...spec.args(paths)],
          env: { ...spec.env, HOME: paths.scratch, TMPDIR: paths.scratch }, paths, unsafe: true, release: () => undefined,
        };
      }
      const bwrap = findExecutable(settings.bwrap);
      if (!bwrap) throw new SandboxUnavailable(`bubblewrap (${settings.bwrap}) is not installed; install it (apt-get install bubblewrap) or, for local development only, set SILICO_UNSAFE_NO_SANDBOX=1`);
      const python = findExecutable(spec.python);
      if (!python) throw new SandboxUnavailable(`the lab runtime's interpreter ${spec.python} is missing`);
      const filterFile = await (filter ??= compileFilter());
      const uid = root ? takeUid() : null;
      const ro = spec.binds?.ro ?? [];
      const rw = spec.binds?.rw ?? [];
      try {
        // A scratch of its own size is made inside the sandbox; nothing of it is on the host.
        const hostScratch = spec.limits.scratchBytes ? [] : [spec.scratch];
        for (const d of hostScratch) await mkdir(d, { recursive: true, mode: 0o700 });
        if (uid !== null) for (const d of [...hostScratch, ...rw]) await chown(d, uid, uid);
      } catch (err) {
        if (uid !== null) inUse.delete(uid);
        throw new SandboxUnavailable(`cannot prepare the scratch directory: ${(err as Error).message}`);
      }
      // The runtime's prefix (a virtualenv) and its base interpreter's, each at its own
      // path: the interpreter finds its standard library and packages from there.
      const prefixes = [...new Set([path.dirname(path.dirname(python)), path.dirname(path.dirname(realpathSync(python)))])]
        .filter((p) => p !== '/usr' && !p.startsWith('/usr/'));
      const script = path.join(SCRIPT_DIR, path.basename(spec.script));
      const env = Object.entries({ ...spec.env, HOME: INSIDE.scratch, TMPDIR: '/tmp' }).flatMap(([k, v]) => ['--setenv', k, v]);
      // As root the namespaces need no user namespace, and setpriv drops to the run's own
      // host uid; otherwise bubblewrap maps the worker's uid to an anonymous one.
      const identity = uid !== null
        ? ['--reuid', String(uid), '--regid', String(uid), '--clear-groups', '--bounding-set=-all', '--inh-caps=-all']
        : [];
      const args = [
        ...(uid !== null ? [] : ['--unshare-user', '--uid', '65534', '--gid', '65534']),
        '--unshare-pid', '--unshare-net', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
        '--hostname', 'lab', '--die-with-parent', '--new-session', '--clearenv', ...env,
        // The sandbox's init pid, as the worker sees it: killing it ends every process of the
        // sandbox's PID namespace, even one whose bubblewrap died before it could pass on death.
        '--info-fd', String(INFO_FD), '--seccomp', String(FILTER_FD),
        // The private /tmp first: a runtime kept under /tmp (a cache folder there) is bound
        // into it below, not hidden by it.
        '--perms', '01777', '--size', String(spec.limits.tmpBytes), '--tmpfs', '/tmp',
        // Made before the binds and readable: the directories bubblewrap would make for a
        // bind are closed to the sandbox's user.
        ...ancestors([...prefixes, script, '/etc/ld.so.cache', ...ro, ...rw, ...(spec.socket ? [spec.socket.inside] : [])]).flatMap((d) => ['--perms', '0755', '--dir', d]),
        '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib',
        '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/sbin', '/sbin',
        '--ro-bind-try', '/etc/ld.so.cache', '/etc/ld.so.cache',
        '--proc', '/proc', '--dev', '/dev',
        ...prefixes.flatMap((p) => ['--ro-bind', p, p]),
        ...ro.flatMap((p) => ['--ro-bind', p, p]),
        ...rw.flatMap((p) => ['--bind', p, p]),
        ...(spec.socket ? ['--bind', spec.socket.host, spec.socket.inside] : []),
        '--ro-bind', spec.script, script,
        '--ro-bind', FORKSERVE, path.join(SCRIPT_DIR, path.basename(FORKSERVE)),
        '--ro-bind', spec.input, INSIDE.input,
        ...(spec.limits.scratchBytes
          ? ['--perms', '01777', '--size', String(spec.limits.scratchBytes), '--tmpfs', INSIDE.scratch]
          : ['--bind', spec.scratch, INSIDE.scratch]),
        '--chdir', INSIDE.scratch,
        '--', '/usr/bin/prlimit', ...limitArgs(spec.limits),
        '--', '/usr/bin/setpriv', ...identity, '--no-new-privs',
        '--', python, '-u', script, ...spec.args(INSIDE),
      ];
      return { command: bwrap, args, env: {}, paths: INSIDE, unsafe: false, filter: filterFile, release: () => { if (uid !== null) inUse.delete(uid); } };
    },
  };
}

export type Sandbox = ReturnType<typeof createSandbox>;

/** The directories above `paths`, parents first, for the sandbox to make. */
function ancestors(paths: string[]): string[] {
  const dirs = new Set<string>();
  for (const p of paths) {
    for (let d = path.dirname(p); d !== '/' && d !== '.'; d = path.dirname(d)) dirs.add(d);
  }
  return [...dirs].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b));
}

/** Messages the sandbox's own tools print when they cannot set it up. */
export function isSandboxSetupFailure(stderrFirstLine: string): boolean {
  return /^(bwrap|prlimit|setpriv): /.test(stderrFirstLine);
}

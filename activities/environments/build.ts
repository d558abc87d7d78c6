import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { outcomeError, runLabProcess } from '../execution/labProcess.ts';
import type { Sandbox, SandboxLimits } from '../execution/sandbox.ts';
import { indexHosts, plainIndexOrigin, startIndexProxy } from './indexProxy.ts';
import { uvEnv, type EnvironmentSettings } from '../../kernel/environments.ts';
import { layoutDigest, type SharedEnvironments } from './shared.ts';
import { processTag } from '../workerScratch.ts';

const run = promisify(execFile);
const RELAY = fileURLToPath(new URL('./buildRelay.py', import.meta.url));
const PROXY_INSIDE = '/run/silico/index-proxy.sock';

/** A build's bounds: enough for uv to unpack scientific wheels, nothing like a machine. */
const BUILD_LIMITS: SandboxLimits = {
  memoryBytes: 8 * 2 ** 30, cpuSeconds: 900, processes: 256, openFiles: 4096, fileSizeBytes: 2 * 2 ** 30, tmpBytes: 2 ** 30,
};

/** Builds in flight in this process by lock digest: two runs of one lab share a build. */
const building = new Map<string, Promise<string>>();

/** The host's certificate store, shown to the build read-only (an operator's CA for the index is in it). */
function trustPaths(host: NodeJS.ProcessEnv): string[] {
  const paths = ['/etc/ssl', host.SSL_CERT_DIR, host.SSL_CERT_FILE && path.dirname(host.SSL_CERT_FILE)].filter((p): p is string => Boolean(p) && existsSync(p!));
  return [...new Set(paths)].filter((p, _, all) => !all.some((q) => q !== p && p.startsWith(`${q}/`)));
}

/**
 * The interpreter of a lock's environment, built first when this host has none: a
 * virtualenv on the deployment's interpreter of the lock's Python, holding exactly the
 * lock. It is made sandboxed like a lab (its own user, no network of its own, no view of
 * the service's data, bounded): the interpreter's venv, then `uv pip install --require-hashes --no-deps
 * --no-build` (every file checked against its hash, wheels only, so no package code runs
 * while installing) reaching only the index's hosts through an allow-listing proxy, then
 * an import check in the same sandbox. Built aside and renamed into place by its digest,
 * then only ever read. `onBuild` is called when a build starts.
 *
 * With `shared`, an environment another worker of this layout built is taken from the
 * object store instead (checked against its digest; `onFetched` is called), and one built
 * here is put there for the others, in the background (`onPublished` hears how that went;
 * a worker that fails to share it builds nothing less for itself).
 */
export function ensureEnvironment(
  s: EnvironmentSettings, sandbox: Sandbox, lock: { sha256: string; python: string; lock: string }, onBuild?: () => void,
  shared?: { environments: SharedEnvironments; onFetched?: () => void; onPublished?: (err?: unknown) => void },
): Promise<string> {
  const dir = path.join(s.dir, lock.sha256);
  const python = path.join(dir, 'bin', 'python');
  if (existsSync(python)) return Promise.resolve(python);
  const pending = building.get(lock.sha256);
  if (pending) return pending;
  /** Puts a finished environment in place: the build's user owned it; from now on nobody but root does. */
  const install = async (tmp: string) => {
    if (process.getuid?.() === 0) await run('/usr/bin/chown', ['-R', '0:0', tmp]);
    await chmod(tmp, 0o755);
    // Only the interpreter is used afterwards, and it finds its packages from its own path.
    await rename(tmp, dir).catch((err) => {
      // Another worker of this host finished the same lock first: keep its copy.
      if (!existsSync(python)) throw err;
    });
  };
  const build = (async () => {
    const base = s.pythons[lock.python];
    if (!base) throw new Error(`Python ${lock.python} is not provided on this worker`);
    await mkdir(s.dir, { recursive: true, mode: 0o755 });
    // Named by this process, so a worker that starts after this one was killed clears it (workerScratch.ts).
    const work = await mkdtemp(path.join(s.dir, `.work-${lock.sha256.slice(0, 12)}-${processTag()}-`));
    const tmp = path.join(work, 'env');
    const layout = layoutDigest(s.dir, base);
    await mkdir(tmp, { mode: 0o755 });
    // Built by another worker of this layout: taken whole, or not at all.
    if (shared && await shared.environments.fetch(lock.sha256, layout, tmp).catch(() => false)) {
      try {
        await install(tmp);
        shared.onFetched?.();
        return python;
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    }
    await rm(tmp, { recursive: true, force: true });
    onBuild?.();
    const input = path.join(work, 'input');
    const proxy = await startIndexProxy(path.join(work, 'index.sock'), indexHosts(s.indexUrl, s.indexHosts), plainIndexOrigin(s.indexUrl));
    try {
      await mkdir(tmp, { mode: 0o755 });
      await mkdir(input, { mode: 0o755 });
      await writeFile(path.join(input, 'lock.txt'), lock.lock, { mode: 0o644 });
      const envPython = path.join(tmp, 'bin', 'python');
      const commands = [
        [base, '-m', 'venv', '--without-pip', tmp],
        [s.uv, 'pip', 'install', '--python', envPython, '--require-hashes', '--no-deps', '--no-build', '--index-url', s.indexUrl, '--quiet', '--color', 'never', '-r', '/input/lock.txt'],
        [envPython, '-c', 'import biosim, numpy, yaml'],
      ];
      const host = process.env;
      // Its disk is bounded too: what it has written is measured while it runs, and a build
      // past the bound is stopped.
      const overDisk = new AbortController();
      const written = async () => {
        const { stdout } = await run('du', ['-sb', tmp, path.join(work, 'scratch')]).catch(() => ({ stdout: '' }));
        return stdout.split('\n').reduce((n, l) => n + (Number(l.split('\t')[0]) || 0), 0);
      };
      const tooMuch = `the build wrote more than ${s.buildMaxBytes} bytes`;
      const watch = setInterval(() => void written().then((bytes) => { if (bytes > s.buildMaxBytes) overDisk.abort(); }), 1000);
      const outcome = await runLabProcess(sandbox, {
        python: base, script: RELAY, input, scratch: path.join(work, 'scratch'),
        args: () => [PROXY_INSIDE, JSON.stringify(commands)], limits: { ...BUILD_LIMITS, cpuSeconds: s.timeoutSeconds },
        // uv's own settings, with its downloads in the build's scratch (gone with it).
        env: { ...uvEnv(s, host), LANG: 'C.UTF-8', UV_CACHE_DIR: '/scratch/uv-cache' },
        binds: { ro: [path.dirname(path.dirname(s.uv)), ...trustPaths(host)], rw: [tmp] },
        socket: { host: path.join(work, 'index.sock'), inside: PROXY_INSIDE },
      }, '', { wallSeconds: s.timeoutSeconds, signal: overDisk.signal }, { onMessage: () => undefined }).finally(() => clearInterval(watch));
      if (outcome.cancelled) throw new Error(`${tooMuch} and was stopped`);
      const error = outcomeError(outcome);
      if (error) {
        const refused = proxy.refused.length ? ` (refused: ${proxy.refused.slice(0, 5).join(', ')})` : '';
        throw new Error(`${error.code}: ${outcome.stderrTail.slice(-6).join(' ').trim() || error.message}${refused}`);
      }
      // Finished between two measures: it is held to the bound all the same.
      if (await written() > s.buildMaxBytes) throw new Error(tooMuch);
      await install(tmp);
      if (shared) void shared.environments.publish(lock.sha256, layout, dir).then(() => shared.onPublished?.(), (err) => shared.onPublished?.(err));
      return python;
    } catch (err) {
      throw new Error(`could not build the environment ${lock.sha256}: ${(err as Error).message.split('\n').slice(-5).join(' ')}`);
    } finally {
      await proxy.close();
      await rm(work, { recursive: true, force: true });
    }
  })().finally(() => building.delete(lock.sha256));
  building.set(lock.sha256, build);
  return build;
}

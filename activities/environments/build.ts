import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { uvEnv, type EnvironmentSettings } from './settings.ts';

const run = promisify(execFile);

/** Builds in flight in this process by lock digest: two runs of one lab share a build. */
const building = new Map<string, Promise<string>>();

/**
 * The interpreter of a lock's environment, built first when this host has none: a
 * virtualenv on the deployment's interpreter of the lock's Python, holding exactly the
 * lock (`uv pip install --require-hashes --no-deps --no-build`: every file checked
 * against its hash, wheels only, so no package code runs while it is installed), built
 * aside and renamed into place by its digest, then only ever read (labs run as users who
 * own nothing of it). `onBuild` is called when a build starts.
 */
export function ensureEnvironment(s: EnvironmentSettings, lock: { sha256: string; python: string; lock: string }, onBuild?: () => void): Promise<string> {
  const dir = path.join(s.dir, lock.sha256);
  const python = path.join(dir, 'bin', 'python');
  if (existsSync(python)) return Promise.resolve(python);
  const pending = building.get(lock.sha256);
  if (pending) return pending;
  const build = (async () => {
    const base = s.pythons[lock.python];
    if (!base) throw new Error(`Python ${lock.python} is not provided on this worker`);
    onBuild?.();
    await mkdir(s.dir, { recursive: true, mode: 0o755 });
    const tmp = await mkdtemp(path.join(s.dir, `.build-${lock.sha256.slice(0, 12)}-`));
    try {
      await run(base, ['-m', 'venv', '--without-pip', tmp], { timeout: 60_000 });
      const requirements = path.join(tmp, 'lock.txt');
      await writeFile(requirements, lock.lock);
      await run(s.uv, ['pip', 'install', '--python', path.join(tmp, 'bin', 'python'), '--require-hashes', '--no-deps', '--no-build', '--index-url', s.indexUrl, '--quiet', '--color', 'never', '-r', requirements],
        { env: uvEnv(s), timeout: s.timeoutSeconds * 1000, maxBuffer: 16 << 20 });
      await run(path.join(tmp, 'bin', 'python'), ['-c', 'import biosim, numpy, yaml'], { timeout: 60_000 });
      await chmod(tmp, 0o755);
      // Only the interpreter is used afterwards, and it finds its packages from its own path.
      await rename(tmp, dir).catch(async (err) => {
        // Another worker of this host finished the same lock first: keep its copy.
        if (!existsSync(python)) throw err;
        await rm(tmp, { recursive: true, force: true });
      });
      return python;
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      const e = err as { stderr?: string; message: string };
      throw new Error(`could not build the environment ${lock.sha256}: ${(e.stderr || e.message).trim().split('\n').slice(-5).join(' ')}`);
    }
  })().finally(() => building.delete(lock.sha256));
  building.set(lock.sha256, build);
  return build;
}

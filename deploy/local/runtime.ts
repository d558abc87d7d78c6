import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { cacheDir } from './binaries.ts';
import { REPO_ROOT } from './paths.ts';

const run = promisify(execFile);
export const REQUIREMENTS = path.join(REPO_ROOT, 'activities/execution/requirements.txt');

/**
 * The lab runtime: one virtualenv with the pinned `biosimulant` and numpy, created once
 * in the per-user cache (keyed by the requirements' digest, so a pin change makes a new
 * one) and never during a run. Returns its Python interpreter.
 */
export async function ensureRuntime(log: (l: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.SILICO_PYTHON) return env.SILICO_PYTHON;
  const reqs = await readFile(REQUIREMENTS);
  const key = createHash('sha256').update(reqs).digest('hex').slice(0, 12);
  const dir = path.join(cacheDir(env), 'runtime', `py-${key}`);
  const python = path.join(dir, 'bin', 'python');
  if (existsSync(python)) return python;
  const base = env.PYTHON ?? 'python3';
  await mkdir(path.dirname(dir), { recursive: true });
  const tmp = await mkdtemp(`${dir}.build-`);
  log(`creating the lab runtime environment (biosimulant, numpy) in ${dir}`);
  try {
    await run(base, ['-m', 'venv', tmp]);
    await run(path.join(tmp, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS], { maxBuffer: 16 << 20 });
    // Built aside and renamed, so a parallel start never sees half an environment. Only
    // the interpreter is used afterwards, and it finds its site-packages from its own path.
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
    await run(path.join(dir, 'bin', 'python'), ['-c', 'import biosimulant, numpy']);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw new Error(`could not create the lab runtime: ${(err as Error).message}`);
  }
  log('lab runtime ready');
  return python;
}

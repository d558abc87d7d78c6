import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rename, rm, mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { createHash } from 'node:crypto';
import { cacheDir } from './binaries.ts';
import { discoverPythons } from './interpreters.ts';
import { RUNTIME_LOCK_FILE, TOOLKIT_LOCK_FILE, parseRuntimeLock } from '../../storage/runtimePins.ts';

const run = promisify(execFile);

/** The runtime lock (activities/execution/requirements.lock), parsed. */
export async function runtimeLock(): Promise<ReturnType<typeof parseRuntimeLock>> {
  return parseRuntimeLock(await readFile(RUNTIME_LOCK_FILE, 'utf8'));
}

async function versionOf(python: string): Promise<string | null> {
  const { stdout } = await run(python, ['-c', 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")']).catch(() => ({ stdout: '' }));
  return stdout.trim() || null;
}

/**
 * An interpreter of the Python version the runtime lock names, to build the runtime with:
 * `PYTHON` when set (it must be that version), else `python<version>` on PATH, else
 * `python3` when it is that version; null when there is none.
 */
export async function runtimePython(env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  return pythonOf((await runtimeLock()).python, env);
}

async function pythonOf(wanted: string, env: NodeJS.ProcessEnv): Promise<string | null> {
  const candidates = env.PYTHON ? [env.PYTHON] : [`python${wanted}`, 'python3'];
  for (const c of candidates) if ((await versionOf(c)) === wanted) return c;
  // Where that version is not on PATH (a pyenv build outside `pyenv global`), the one lab
  // environments would be built on.
  return env.PYTHON ? null : (await discoverPythons(env))[wanted] ?? null;
}

/** The analysis environment's lock (activities/studies/analysis.lock). */
export const ANALYSIS_LOCK_FILE = path.join(path.dirname(RUNTIME_LOCK_FILE), '..', 'studies', 'analysis.lock');

/**
 * The lab runtime: one virtualenv holding exactly the committed lock
 * (activities/execution/requirements.lock: the pinned `biosimulant`, numpy and everything
 * they bring), created once and never during a run. The lock is also what plan-time pin
 * checks compare labs against, so it must be the truth: installed without resolution and
 * checked. Returns its Python interpreter.
 */
export async function ensureRuntime(log: (l: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.SILICO_PYTHON) return env.SILICO_PYTHON;
  return ensureLockedEnv(log, env, { lockFile: RUNTIME_LOCK_FILE, dirName: 'runtime', what: 'the lab runtime', contents: 'biosimulant, numpy, ...', imports: 'biosimulant, numpy' });
}

/**
 * The analysis environment of studies (activities/studies/analysis.lock: SALib, Optuna,
 * cmaes, numpy, scipy), the service's own and never a lab's, made like the lab runtime.
 * Returns its Python interpreter.
 */
export async function ensureAnalysisEnv(log: (l: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.SILICO_ANALYSIS_PYTHON) return env.SILICO_ANALYSIS_PYTHON;
  return ensureLockedEnv(log, env, { lockFile: ANALYSIS_LOCK_FILE, dirName: 'analysis', what: 'the analysis environment', contents: 'SALib, optuna, cmaes, ...', imports: 'SALib, optuna, cmaes, numpy, scipy' });
}

/**
 * The PEtab toolkit (activities/petab/toolkit.lock: biosimulant, tellurium, petab,
 * pyPESTO, fides), made like the lab runtime: the runtime that labs declaring its pins
 * (an imported PEtab problem's) run in, sandboxed, and pyPESTO in-process for the suite
 * and the benchmarks. Returns its Python interpreter.
 */
export async function ensurePetabEnv(log: (l: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.SILICO_PETAB_PYTHON) return env.SILICO_PETAB_PYTHON;
  return ensureLockedEnv(log, env, { lockFile: TOOLKIT_LOCK_FILE, dirName: 'petab', what: 'the PEtab toolkit', contents: 'biosimulant, tellurium, petab, pypesto, ...', imports: 'biosim, roadrunner, petab, pypesto, fides' });
}

/**
 * A virtualenv holding exactly a committed lock (pip's hash-checking mode, --no-deps,
 * then `pip check`), created once in the per-user cache keyed by the lock's digest (a pin
 * change makes a new one), on the Python version the lock names. Returns its interpreter.
 */
async function ensureLockedEnv(
  log: (l: string) => void, env: NodeJS.ProcessEnv, o: { lockFile: string; dirName: string; what: string; contents: string; imports: string },
): Promise<string> {
  const reqs = await readFile(o.lockFile);
  const lock = parseRuntimeLock(reqs.toString('utf8'));
  const key = createHash('sha256').update(reqs).digest('hex').slice(0, 12);
  const dir = path.join(cacheDir(env), o.dirName, `py-${key}`);
  const python = path.join(dir, 'bin', 'python');
  if (existsSync(python)) {
    await chmod(dir, 0o755);
    return python;
  }
  const base = await pythonOf(lock.python, env);
  if (!base) throw new Error(`${o.what} needs Python ${lock.python} (its lock's): install it (sudo apt-get install python${lock.python} python${lock.python}-venv) or set PYTHON to a Python ${lock.python} interpreter`);
  await mkdir(path.dirname(dir), { recursive: true });
  const tmp = await mkdtemp(`${dir}.build-`);
  log(`creating ${o.what} (${path.basename(o.lockFile)}: ${o.contents}) in ${dir}`);
  try {
    await run(base, ['-m', 'venv', tmp]);
    const pip = [path.join(tmp, 'bin', 'python'), '-m', 'pip', '--disable-pip-version-check'] as const;
    await run(pip[0], [...pip.slice(1), 'install', '--quiet', '--no-deps', '-r', o.lockFile], { maxBuffer: 16 << 20 });
    await run(pip[0], [...pip.slice(1), 'check'], { maxBuffer: 16 << 20 });
    // Built aside and renamed, so a parallel start never sees half an environment. Only
    // the interpreter is used afterwards, and it finds its site-packages from its own path.
    await rm(dir, { recursive: true, force: true });
    // Sandboxed labs run as users of their own, who read the runtime but own nothing of it.
    await chmod(tmp, 0o755);
    await rename(tmp, dir);
    await run(path.join(dir, 'bin', 'python'), ['-c', `import ${o.imports}`]);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw new Error(`could not create ${o.what}: ${(err as Error).message}`);
  }
  log(`${o.what} ready`);
  return python;
}

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheDir } from './binaries.ts';

const run = promisify(execFile);

/**
 * A command-line tool from PyPI, installed exactly as `lockFile` pins it (pip
 * --no-deps) into a virtual environment of its own in the cache, once per lock content.
 * Returns the executable's path.
 */
export async function pythonTool(lockFile: string, executable: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const lock = await readFile(lockFile);
  const dir = path.join(cacheDir(env), 'python-tools', `${path.basename(lockFile, '.lock')}-${createHash('sha256').update(lock).digest('hex').slice(0, 12)}`);
  const bin = path.join(dir, 'bin', executable);
  if (existsSync(bin)) return bin;
  await mkdir(path.dirname(dir), { recursive: true });
  const tmp = await mkdtemp(`${dir}.build-`);
  try {
    await run(env.PYTHON ?? 'python3', ['-m', 'venv', tmp]);
    await run(path.join(tmp, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', '--no-deps', '-r', lockFile], { maxBuffer: 16 << 20 });
    // Built aside and renamed, so a parallel start never sees half an environment.
    await rm(dir, { recursive: true, force: true });
    await rename(tmp, dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  return bin;
}

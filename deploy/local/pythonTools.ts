import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
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
  // Made in place (its scripts' #! lines name this venv's own interpreter, so it cannot
  // be built aside and moved); the marker says it was finished.
  const done = path.join(dir, '.installed');
  if (existsSync(done)) return bin;
  await rm(dir, { recursive: true, force: true });
  await mkdir(path.dirname(dir), { recursive: true });
  try {
    await run(env.PYTHON ?? 'python3', ['-m', 'venv', dir]);
    await run(path.join(dir, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', '--no-deps', '-r', lockFile], { maxBuffer: 16 << 20 });
    await writeFile(done, '');
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return bin;
}

import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The Python versions lab environments may ask for here (biosimulant's own floor is 3.10). */
const MINORS = [10, 11, 12, 13];

/** `major.minor` of an interpreter, and its real executable (a pyenv shim is no interpreter). */
async function probe(candidate: string): Promise<{ version: string; executable: string } | null> {
  try {
    const { stdout } = await run(candidate, ['-c', 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}"); print(sys.executable)'], { timeout: 10_000 });
    const [version, executable] = stdout.trim().split('\n');
    return version && executable ? { version, executable } : null;
  } catch {
    return null;
  }
}

/**
 * The Python interpreters of this machine a lab environment can be built on, by version:
 * `python3.X` in the system's folders, else the newest pyenv build of it. What the local
 * stack provides (SILICO_PYTHONS); a container image names its own.
 */
export async function discoverPythons(env: NodeJS.ProcessEnv = process.env): Promise<Record<string, string>> {
  const pyenv = path.join(env.PYENV_ROOT ?? path.join(homedir(), '.pyenv'), 'versions');
  const builds = await readdir(pyenv).catch(() => [] as string[]);
  const found: Record<string, string> = {};
  await Promise.all(MINORS.map(async (minor) => {
    const wanted = `3.${minor}`;
    const patch = (v: string) => Number(v.split('.')[2] ?? -1);
    const pyenvBuilds = builds.filter((b) => new RegExp(`^3\\.${minor}\\.\\d+$`).test(b)).sort((a, b) => patch(b) - patch(a));
    const candidates = [`/usr/bin/python${wanted}`, `/usr/local/bin/python${wanted}`, ...pyenvBuilds.map((b) => path.join(pyenv, b, 'bin', `python${wanted}`))];
    for (const c of candidates) {
      const p = await probe(c);
      if (p?.version === wanted) {
        found[wanted] = p.executable;
        return;
      }
    }
  }));
  return found;
}

/** The SILICO_PYTHONS form of a version → interpreter map. */
export function pythonsSetting(pythons: Record<string, string>): string {
  return Object.entries(pythons).sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true })).map(([v, p]) => `${v}=${p}`).join(',');
}

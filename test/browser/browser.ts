import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { debianTool } from '../../deploy/local/apt.ts';
import { CONSOLE_DIST } from '../../api/console.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

const run = promisify(execFile);

/** The console as the sources stand now (a second or so), so a test never drives a stale bundle. */
export async function buildConsole(): Promise<void> {
  await run('npm', ['run', 'console:build'], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });
}

/** Debian's chromium (installed with apt-get when this is a fresh CI machine): no browser download. */
export async function browserExecutable(): Promise<string> {
  const exe = await debianTool('chromium', 'chromium', (l) => process.stdout.write(`[browser] ${l}\n`));
  if (!exe) throw new Error('the browser tests need Debian\'s chromium: apt-get install chromium');
  return exe;
}

/** Every file the console ships, raw and gzipped (what a browser downloads with Content-Encoding: gzip). */
export async function bundleSize(): Promise<{ raw: number; gzipped: number }> {
  let raw = 0;
  let gzipped = 0;
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else {
        const bytes = await readFile(p);
        raw += bytes.length;
        gzipped += gzipSync(bytes, { level: 9 }).length;
      }
    }
  };
  await walk(CONSOLE_DIST);
  return { raw, gzipped };
}

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findExecutable } from '../../activities/execution/sandbox.ts';

const run = promisify(execFile);

/**
 * A tool from a Debian package: on PATH already, or installed with apt-get when this
 * process is root (a fresh CI machine); null when neither (the caller says what to
 * install). The package lists are refreshed only when an install finds them stale.
 */
export async function debianTool(executable: string, pkg: string, say: (l: string) => void): Promise<string | null> {
  const found = findExecutable(executable);
  if (found || process.getuid?.() !== 0 || !findExecutable('apt-get')) return found;
  say(`installing ${pkg} with apt-get`);
  const apt = (args: string[]) => run('apt-get', args, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 16 << 20 });
  try {
    await apt(['install', '-y', '-qq', pkg]);
  } catch {
    await apt(['update', '-qq']);
    await apt(['install', '-y', '-qq', pkg]);
  }
  return findExecutable(executable);
}

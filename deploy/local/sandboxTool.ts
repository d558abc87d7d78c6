import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findExecutable } from '../../activities/execution/sandbox.ts';

const run = promisify(execFile);

/**
 * Makes sure lab processes can be sandboxed on this machine before the worker starts:
 * bubblewrap is installed (the stack's prerequisites install it as root, from Debian's
 * `bubblewrap` package, or name the command) and can create the namespaces. With
 * SILICO_UNSAFE_NO_SANDBOX=1 it only warns, loudly. Throws when labs could not run.
 */
export async function ensureSandboxTool(say: (l: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (env.SILICO_UNSAFE_NO_SANDBOX === '1') {
    say('WARNING: SILICO_UNSAFE_NO_SANDBOX=1 — labs run WITHOUT a sandbox, as this user, with its network and files. Development only.');
    return;
  }
  const name = env.SILICO_SANDBOX_BWRAP || 'bwrap';
  const bwrap = findExecutable(name);
  if (!bwrap) {
    throw new Error(`bubblewrap (${name}) is not installed, and every lab runs in its sandbox: install it (sudo apt-get install bubblewrap), or for local development only set SILICO_UNSAFE_NO_SANDBOX=1`);
  }
  const userns = process.getuid?.() === 0 ? [] : ['--unshare-user'];
  try {
    await run(bwrap, [...userns, '--unshare-pid', '--unshare-net', '--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib',
      '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/bin', '/bin', '--proc', '/proc', '--dev', '/dev', '--', '/usr/bin/true']);
  } catch (err) {
    const why = String((err as { stderr?: string }).stderr ?? (err as Error).message).trim();
    throw new Error(`bubblewrap cannot create the lab sandbox here (${why}); labs would fail with sandbox_unavailable. Allow user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run the worker as root; for local development only, SILICO_UNSAFE_NO_SANDBOX=1`);
  }
}

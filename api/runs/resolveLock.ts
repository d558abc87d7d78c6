import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { uvEnv, type EnvironmentSettings } from '../../kernel/environments.ts';

/** An environment lock: every distribution pinned exactly with its hashes, for one Python version. */
export interface EnvironmentLock { python: string; text: string; sha256: string; /** How many distributions it pins. */ distributions: number }

/** The target platform of a lock: the workers' (Linux, glibc, this machine's architecture). */
const PLATFORM = process.arch === 'arm64' ? 'aarch64-manylinux_2_28' : 'x86_64-manylinux_2_28';

/**
 * Resolves requirements to a lock with uv (`uv pip compile --generate-hashes`) against
 * the configured index, for the deployment's interpreter of `python`. Wheels only
 * (`--no-build`): resolving runs no code of any package, and what it locks installs
 * without running any. The resolver's own words come back when it cannot.
 */
export async function resolveLock(s: EnvironmentSettings, python: string, requirements: string[]): Promise<{ lock: EnvironmentLock } | { error: string }> {
  const interpreter = s.pythons[python];
  if (!interpreter) return { error: `Python ${python} is not provided here` };
  const args = ['pip', 'compile', '-', '--python', interpreter, '--python-version', python, '--python-platform', PLATFORM,
    '--generate-hashes', '--no-header', '--no-annotate', '--no-build', '--index-url', s.indexUrl, '--quiet', '--color', 'never'];
  const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(s.uv, args, { env: uvEnv(s), timeout: s.timeoutSeconds * 1000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr: stderr || (err && !stderr ? err.message : '') });
    });
    // uv may exit before reading it all (a bad option, say): its exit code says why, not an EPIPE.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(`${requirements.join('\n')}\n`);
  });
  if (out.code !== 0) return { error: out.stderr.trim().replace(/^error: /, '') || `uv exited with ${out.code}` };
  const text = `# python ${python}\n${out.stdout.trim()}\n`;
  const distributions = text.split('\n').filter((l) => /^[A-Za-z0-9]/.test(l)).length;
  return { lock: { python, text, sha256: createHash('sha256').update(text).digest('hex'), distributions } };
}

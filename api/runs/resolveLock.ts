import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { uvEnv, type EnvironmentSettings } from '../../kernel/environments.ts';

/** An environment lock: every distribution pinned exactly with its hashes, for one Python version. */
export interface EnvironmentLock { python: string; text: string; sha256: string; /** How many distributions it pins. */ distributions: number }

/** The date a lock was resolved as of, as its header records it. */
const AS_OF_LINE = /^# resolved as of (\d{4}-\d{2}-\d{2})\b/m;

/** Why a lock was resolved as of its date, or as of no date, as its header records it. */
const BASIS_LINE = /^# basis: (.+)$/m;

/** The date a lock's text says it was resolved as of, if it was. */
export function lockAsOf(text: string): string | undefined {
  return AS_OF_LINE.exec(text)?.[1];
}

/** What a lock's text says its date (or its want of one) came from, if it says. */
export function lockBasis(text: string): string | undefined {
  return BASIS_LINE.exec(text)?.[1];
}

/** What a resolution is asked: requirements for a Python, optionally as the index stood at the end of a UTC day. */
export interface LockRequest {
  python: string;
  requirements: string[];
  /** `YYYY-MM-DD`: only files the index had by the end of that day (UTC) count (uv's --exclude-newer). */
  asOf?: string;
  /** Distributions the date does not apply to: what the service itself adds at an exact pin (the driver's runtime). */
  exempt?: string[];
  /** Where the date came from, or why there is none, kept in the lock's header (one line). */
  basis?: string;
}

/** The target platform of a lock: the workers' (Linux, glibc, this machine's architecture). */
const PLATFORM = process.arch === 'arm64' ? 'aarch64-manylinux_2_28' : 'x86_64-manylinux_2_28';

/**
 * Resolves requirements to a lock with uv (`uv pip compile --generate-hashes`) against
 * the configured index, for the deployment's interpreter of `python`. Wheels only
 * (`--no-build`): resolving runs no code of any package, and what it locks installs
 * without running any. The resolver's own words come back when it cannot.
 */
export async function resolveLock(s: EnvironmentSettings, request: LockRequest): Promise<{ lock: EnvironmentLock } | { error: string }> {
  const { python, requirements, asOf } = request;
  const interpreter = s.pythons[python];
  if (!interpreter) return { error: `Python ${python} is not provided here` };
  const args = ['pip', 'compile', '-', '--python', interpreter, '--python-version', python, '--python-platform', PLATFORM,
    '--generate-hashes', '--no-header', '--no-annotate', '--no-build', '--index-url', s.indexUrl, '--quiet', '--color', 'never'];
  if (asOf) {
    // The end of that day in UTC, spelled out (uv reads a bare date in the host's time zone);
    // an exempt exact pin is looked up as the index stands now.
    args.push('--exclude-newer', `${asOf}T23:59:59Z`);
    for (const name of request.exempt ?? []) args.push('--exclude-newer-package', `${name}=${new Date().toISOString()}`);
  }
  const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = execFile(s.uv, args, { env: uvEnv(s), timeout: s.timeoutSeconds * 1000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr: stderr || (err && !stderr ? err.message : '') });
    });
    // uv may exit before reading it all (a bad option, say): its exit code says why, not an EPIPE.
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(`${requirements.join('\n')}\n`);
  });
  if (out.code !== 0) return { error: out.stderr.trim().replace(/^error: /, '') || `uv exited with ${out.code}` };
  const header = [`# python ${python}`, ...(asOf ? [`# resolved as of ${asOf} (uv --exclude-newer)`] : []), ...(request.basis ? [`# basis: ${request.basis.replace(/\s+/g, ' ')}`] : [])];
  const text = `${header.join('\n')}\n${out.stdout.trim()}\n`;
  const distributions = text.split('\n').filter((l) => /^[A-Za-z0-9]/.test(l)).length;
  return { lock: { python, text, sha256: createHash('sha256').update(text).digest('hex'), distributions } };
}

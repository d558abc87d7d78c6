import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const PACK = fileURLToPath(new URL('./pack.py', import.meta.url));
const DRIVER = fileURLToPath(new URL('./driver.py', import.meta.url));

export interface Packed {
  archive: string;
  /** The package and version the archive was packed under (a lab's declared ones when it has them). */
  package: string;
  version: string;
  /** The runtime's logical package hash (hex). */
  package_sha256: string;
  files: Array<{ path: string; sha256: string }>;
}

/** The runtime's packer refused the lab; the message is the packer's own, for the author. */
export class PackRefused extends Error {
  readonly code = 'package_invalid';
}

/**
 * Packs a lab folder with the runtime's own packer (a child process, never this event
 * loop). A null package or version is left to what lab.yaml declares (packerIdentity in
 * storage/labIdentity.ts decides). Rejects with PackRefused when the runtime refuses the lab.
 */
export async function packLab(python: string, dir: string, out: string, identity: { package: string | null; version: string | null }): Promise<Packed> {
  let stdout: string;
  try {
    ({ stdout } = await run(python, [PACK, dir, out, identity.package ?? '', identity.version ?? ''], { maxBuffer: 16 << 20 }));
  } catch (err) {
    // pack.py reports a refusal as JSON on stdout with exit status 2; anything else is a crash of ours.
    stdout = String((err as { stdout?: unknown }).stdout ?? '');
    if (!stdout.trim()) throw err;
  }
  let packed: Packed & { error?: string };
  try {
    packed = JSON.parse(stdout.trim().split('\n').pop()!);
  } catch {
    throw new Error(`pack.py printed no result: ${stdout.slice(-500)}`);
  }
  if (packed.error) throw new PackRefused(packed.error);
  return packed;
}

/**
 * Runs a lab folder to its end with the driver (no events, no artifacts): the smoke test
 * of publication. Resolves with the driver's result or its error.
 */
export async function smokeRun(python: string, dir: string, workdir: string, request: Record<string, unknown>, timeoutMs: number): Promise<{ ok: boolean; message: string }> {
  try {
    const child = run(python, ['-u', DRIVER, dir, workdir], { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 << 20, env: { PATH: '/usr/bin:/bin', HOME: workdir, LANG: 'C.UTF-8', OPENBLAS_NUM_THREADS: '1' } });
    child.child.stdin!.end(JSON.stringify(request));
    const { stdout } = await child;
    const last = JSON.parse(stdout.trim().split('\n').pop()!);
    return last.type === 'result' && last.status === 'completed' ? { ok: true, message: 'The smoke inputs ran to completion.' } : { ok: false, message: JSON.stringify(last).slice(0, 500) };
  } catch (err) {
    const out = String((err as { stdout?: string }).stdout ?? '').trim().split('\n').pop() ?? '';
    return { ok: false, message: out ? out.slice(0, 1000) : (err as Error).message.slice(0, 1000) };
  }
}

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const PACK = fileURLToPath(new URL('./pack.py', import.meta.url));
const DRIVER = fileURLToPath(new URL('./driver.py', import.meta.url));

export interface Packed {
  archive: string;
  /** The runtime's logical package hash (hex). */
  package_sha256: string;
  runtime_problems: string[];
  files: Array<{ path: string; sha256: string }>;
}

/** Packs a lab folder with the runtime's own packer (a child process, never this event loop). */
export async function packLab(python: string, dir: string, out: string, pkg: string, version: string): Promise<Packed> {
  const { stdout } = await run(python, [PACK, dir, out, pkg, version], { maxBuffer: 16 << 20 });
  const packed = JSON.parse(stdout.trim().split('\n').pop()!) as Packed & { error?: string };
  if (packed.error) throw new Error(packed.error);
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

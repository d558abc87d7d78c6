import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

const run = promisify(execFile);
const PACK = fileURLToPath(new URL('./pack.py', import.meta.url));

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

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { labEnv } from './labSpec.ts';
import { runLabProcess, signalError } from './labProcess.ts';
import { SandboxUnavailable, type Sandbox, type SandboxLimits } from './sandbox.ts';

const PACK = fileURLToPath(new URL('./pack.py', import.meta.url));

export interface Packed {
  /** The archive, on the host, in the scratch directory given to packLab. */
  archive: string;
  /** The package and version the archive was packed under (a lab's declared ones when it has them). */
  package: string;
  version: string;
  /** The runtime's logical package hash (hex). */
  package_sha256: string;
  files: Array<{ path: string; sha256: string }>;
}

/** The runtime's packer refused the lab, or the lab made it pass its limits; the message is for the author. */
export class PackRefused extends Error {
  readonly code = 'package_invalid';
}

/** Packing reads, hashes and zips the author's files: bounded like a small run, with room for a large lab. */
const PACK_LIMITS: SandboxLimits = { memoryBytes: 4 * 1024 ** 3, cpuSeconds: 300, processes: 32, openFiles: 256, fileSizeBytes: 4 * 1024 ** 3, tmpBytes: 256 << 20 };
const PACK_WALL_SECONDS = 300;

/**
 * Packs a lab folder with the runtime's own packer, sandboxed like any lab process (the
 * folder is the author's: the packer parses and reads it with no more rights than their
 * run has): the folder read-only, the archive written to `scratch` (made here). A null
 * package or version is left to what lab.yaml declares (packerIdentity in
 * storage/labIdentity.ts decides). Rejects with PackRefused when the runtime refuses the
 * lab or packing it passes the limits, with SandboxUnavailable when it cannot be sandboxed.
 */
export async function packLab(sandbox: Sandbox, python: string, dir: string, scratch: string, identity: { package: string | null; version: string | null }): Promise<Packed> {
  let last = '';
  const outcome = await runLabProcess(sandbox, {
    python, script: PACK, input: dir, scratch, limits: PACK_LIMITS, env: labEnv(1),
    args: (p) => [p.input, path.join(p.scratch, 'package.bsilab'), identity.package ?? '', identity.version ?? ''],
  }, '', { wallSeconds: PACK_WALL_SECONDS }, { onMessage: () => undefined, onLog: (stream, line) => { if (stream === 'stdout' && line.trim()) last = line; } });
  if (outcome.error?.code === 'sandbox_unavailable') throw new SandboxUnavailable(outcome.error.message);
  if (outcome.error?.code === 'timed_out') throw new PackRefused(`Packing the lab took longer than ${PACK_WALL_SECONDS} s.`);
  const stopped = outcome.error ?? signalError(outcome.exitCode);
  if (stopped) throw new PackRefused(`Packing the lab was stopped (${stopped.code}): ${stopped.message}`);
  let packed: Packed & { error?: string };
  try {
    packed = JSON.parse(last);
  } catch {
    // pack.py reports a refusal as JSON with exit status 2; no JSON at all is a crash of ours.
    throw new Error(`pack.py printed no result (exit ${outcome.exitCode}): ${outcome.stderrTail.slice(-5).join(' | ').slice(-500)}`);
  }
  if (packed.error) throw new PackRefused(packed.error);
  return { ...packed, archive: path.join(scratch, 'package.bsilab') };
}

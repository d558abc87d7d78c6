import { fileURLToPath } from 'node:url';
import type { ComputeProfileRow } from '../../storage/db/computeProfiles.ts';
import type { SandboxLimits } from './sandbox.ts';

/** Our lab driver (driver.py), the trusted script every lab process runs. */
export const DRIVER = fileURLToPath(new URL('./driver.py', import.meta.url));

/** The sandbox limits of a run on a compute profile. */
export function runLimits(profile: Pick<ComputeProfileRow, 'memory_mib' | 'vcpus'>, maxRuntimeSeconds: number): SandboxLimits {
  return {
    // Address space, not resident memory: an interpreter with numpy and its threads maps
    // several times what it touches.
    memoryBytes: Math.max(profile.memory_mib, 1024) * 4 * 1024 * 1024,
    cpuSeconds: maxRuntimeSeconds * Math.max(1, profile.vcpus) + 30,
    processes: 64 + 4 * profile.vcpus,
    openFiles: 256,
    fileSizeBytes: 1 << 30,
    tmpBytes: 256 << 20,
  };
}

/**
 * A one-shot run's limits: the above, with a scratch directory of its own bounded to twice
 * the profile's memory (the worker reads nothing back from it: results come on the
 * protocol), and the profile's memory watched across all the lab's processes.
 */
export function oneShotLimits(profile: Pick<ComputeProfileRow, 'memory_mib' | 'vcpus'>, maxRuntimeSeconds: number): SandboxLimits {
  return { ...runLimits(profile, maxRuntimeSeconds), scratchBytes: Math.max(profile.memory_mib, 512) * 2 * 1024 * 1024, labMemoryBytes: profile.memory_mib * 1024 * 1024 };
}

/** The environment a lab process gets: nothing of the worker's. */
export function labEnv(vcpus: number): Record<string, string> {
  return {
    PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1',
    OPENBLAS_NUM_THREADS: String(vcpus), OMP_NUM_THREADS: String(vcpus),
  };
}

import type { Db } from '../../storage/db/knex.ts';
import { getLock, heldLocks, markLockBuilt, noteLockUsed, type EnvironmentLockRow } from '../../storage/db/environments.ts';
import { evictEnvironments, recordBuilt, touchUsed } from './cache.ts';
import { readRuntimeLock, TOOLKIT_LOCK_FILE } from '../../storage/runtimePins.ts';
import { ensureEnvironment } from './build.ts';
import type { EnvironmentSettings } from '../../kernel/environments.ts';
import type { Sandbox } from '../execution/sandbox.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { createSharedEnvironments } from './shared.ts';

const DEFAULT_RUNTIME = readRuntimeLock();
const TOOLKIT = readRuntimeLock(TOOLKIT_LOCK_FILE);

/** How often a process notes that it runs in a lock's environment: enough for a retention of days, never a write per run. */
const NOTE_USE_EVERY_MS = 3600_000;
/** When this process last noted each lock's use (per process, like the builds in flight). */
const usedNoted = new Map<string, number>();

export interface EnvironmentDeps {
  db: Db; environments: EnvironmentSettings; sandbox: Sandbox;
  /** Where built environments are shared with the other workers (shared.ts). */
  objects: ObjectStore;
  /** The default runtime's interpreter. */
  python: string;
}

/** A lock that is not recorded, or an environment that could not be built. */
export class EnvironmentUnavailable extends Error {
  readonly code: 'environment_unavailable' | 'environment_build_failed';
  constructor(code: 'environment_unavailable' | 'environment_build_failed', message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * The interpreter of the environment a lock names: the default runtime's for its lock
 * (or none, as recorded before environments), the deployment's PEtab toolkit for its
 * lock, else that lock's environment, taken from
 * another worker of this layout through the object store or built on this host first
 * when it has none (`onBuild` hears when a build starts and ends).
 */
export async function environmentPython(
  deps: EnvironmentDeps, lockSha256: string | null | undefined,
  onBuild?: { started(lock: EnvironmentLockRow): void; finished(lock: EnvironmentLockRow, seconds: number): Promise<void> },
): Promise<string> {
  if (!lockSha256 || lockSha256 === DEFAULT_RUNTIME.sha256) return deps.python;
  if (lockSha256 === TOOLKIT.sha256) {
    if (deps.environments.toolkitPython) return deps.environments.toolkitPython;
    throw new EnvironmentUnavailable('environment_unavailable', 'The PEtab toolkit runtime is not provided on this worker (SILICO_PETAB_PYTHON).');
  }
  const lock = await getLock(deps.db, lockSha256);
  if (!lock) throw new EnvironmentUnavailable('environment_unavailable', `The environment lock ${lockSha256} is not recorded.`);
  let started = 0;
  let fetched = false;
  let seconds: number | undefined;
  let python: string;
  try {
    python = await ensureEnvironment(deps.environments, deps.sandbox, lock, () => {
      started = Date.now();
      onBuild?.started(lock);
    }, { environments: createSharedEnvironments(deps.objects, deps.db), onFetched: () => { fetched = true; } });
  } catch (err) {
    throw new EnvironmentUnavailable('environment_build_failed', (err as Error).message);
  }
  if (started) {
    seconds = (Date.now() - started) / 1000;
    await onBuild?.finished(lock, seconds);
  }
  if (started || fetched) {
    // A new one takes room: the least recently used others go, never one still needed.
    await recordBuilt(deps.environments.dir, lock.sha256);
    await evictEnvironments(deps.environments.dir, deps.environments.maxBytes, new Set([...await heldLocks(deps.db), lock.sha256]));
  }
  await touchUsed(deps.environments.dir, lock.sha256);
  // Its shared archives stay while any worker runs it, even one that never needs to take them.
  if (Date.now() - (usedNoted.get(lock.sha256) ?? 0) > NOTE_USE_EVERY_MS) {
    usedNoted.set(lock.sha256, Date.now());
    await noteLockUsed(deps.db, lock.sha256);
  }
  // Recorded once: later runs of a built lock write nothing more here.
  if (!lock.built_at) await markLockBuilt(deps.db, lock.sha256, seconds);
  return python;
}

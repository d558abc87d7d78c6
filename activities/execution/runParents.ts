import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import type { RunRow } from '../../storage/db/runs.ts';
import type { ComputeProfileRow } from '../../storage/db/computeProfiles.ts';
import { materialize, type RunSource } from './materialize.ts';
import { labEnv, oneShotLimits } from './labSpec.ts';
import { startWarmInstance, WarmInstanceFailed, type WarmInstance } from './warmInstance.ts';
import type { Sandbox } from './sandbox.ts';

/** A warm parent of runs: a warm instance of one lab, and that lab as it was put on disk. */
export interface RunParent extends WarmInstance { readonly source: RunSource }

/**
 * The key of a run's warm parents: whose runs they fork (the account), with which limits
 * (the compute profile), in which environment (its lock) and of which lab (the release's
 * package digest, or the workspace revision). Runs of one key fork from the same parents
 * and from no others.
 */
export function parentKey(run: Pick<RunRow, 'account_id' | 'compute_profile' | 'runtime_sha256' | 'kind' | 'package_sha256' | 'revision_id'>): string {
  const lab = run.kind === 'hub' ? `package:${run.package_sha256}` : `revision:${run.revision_id}`;
  return [run.account_id, run.compute_profile, `lock:${run.runtime_sha256 ?? 'default'}`, lab].join('|');
}

/** How long a parent gets to import the runtime and check the lab before its runs go cold. */
const READY_SECONDS = 60;

/**
 * Starts a warm parent for the runs of `run`'s key: the lab put in a directory of its own
 * (checked against its content address, as a cold run's is), and a sandbox with a cold
 * run's limits for the profile's longest run (each run bounds its own CPU time) whose
 * driver imports the runtime, checks the lab once and forks a child per run. The directory
 * goes when the parent does. Rejects with WarmInstanceFailed (or SandboxUnavailable).
 */
export async function startRunParent(
  deps: { db: Db; objects: ObjectStore; sandbox: Sandbox }, run: RunRow, profile: ComputeProfileRow, python: string,
): Promise<RunParent> {
  const dir = await mkdtemp(path.join(tmpdir(), `silico-parent-${run.account_id.slice(-8)}-`));
  const removeDir = () => void rm(dir, { recursive: true, force: true }).catch(() => undefined);
  try {
    const source = await materialize(deps, run, path.join(dir, 'input'));
    if ('error' in source) throw new WarmInstanceFailed(source.error);
    const instance = await startWarmInstance(deps.sandbox, {
      python, input: path.join(dir, 'input'), scratch: path.join(dir, 'scratch'),
      limits: oneShotLimits(profile, profile.max_runtime_seconds), env: labEnv(profile.vcpus),
    }, source.entry, source.request, { readySeconds: READY_SECONDS, onExit: removeDir });
    return Object.assign(instance, { source });
  } catch (err) {
    removeDir();
    throw err;
  }
}

import { getRun, listArtifacts } from '../../storage/db/runs.ts';
import { replicateRuns } from '../../storage/db/passports.ts';
import { digestJson } from '../../storage/digest.ts';
import { checked, type CheckResult } from '../../storage/passportDocument.ts';
import type { CheckDeps } from './deps.ts';

/** A run's artifacts as file name → sha256. */
async function hashesOf(deps: CheckDeps, runId: string): Promise<Map<string, string>> {
  return new Map((await listArtifacts(deps.db, runId)).map((a) => [a.file_name, a.sha256]));
}

/**
 * reproducibility: the account's other completed runs of the same package with the same
 * inputs, seed and compute profile (replicates) must have left the same artifacts, file
 * by file and hash by hash. Equal → passed, with the hashes; any difference → failed,
 * naming the files; no replicate → not_applicable. A run answered from another (reuse) is
 * neither compared nor a replicate (replicateRuns leaves such runs out): not_applicable,
 * naming its source.
 */
export async function reproducibility(deps: CheckDeps, runId: string): Promise<CheckResult> {
  const run = (await getRun(deps.db, runId))!;
  if (run.reused_from) {
    // Its artifact rows are its source's, copied: comparing them would pass trivially.
    return checked('reproducibility', 'not_applicable', {
      reason: `the run was answered from the completed run ${run.reused_from} (reuse): its artifacts are that run's, not a replicate's; that run's own passport compares its replicates`,
      reused_from: run.reused_from,
    });
  }
  if (run.status !== 'completed') return checked('reproducibility', 'not_applicable', { reason: `the run is ${run.status}: only completed runs are compared`, run_status: run.status });
  const criteria = { package_sha256: run.package_sha256, inputs_sha256: digestJson(run.inputs), seed: run.seed, compute_profile: run.compute_profile };
  const others = await replicateRuns(deps.db, run);
  if (!others.length) {
    return checked('reproducibility', 'not_applicable', { reason: 'no other completed run of this account has the same package, inputs, seed and compute profile', criteria, replicates: [] });
  }
  const mine = await hashesOf(deps, run.id);
  const replicates = [];
  for (const other of others) {
    const theirs = await hashesOf(deps, other.id);
    const differing = [...new Set([...mine.keys(), ...theirs.keys()])].filter((f) => mine.get(f) !== theirs.get(f)).sort();
    replicates.push({ run_id: other.id, equal: differing.length === 0, differing });
  }
  const hashes = [...mine].sort(([a], [b]) => (a < b ? -1 : 1)).map(([file_name, sha256]) => ({ file_name, sha256 }));
  return checked('reproducibility', replicates.every((r) => r.equal) ? 'passed' : 'failed', { criteria, hashes, replicates });
}

import { getRun, listArtifacts, TERMINAL } from '../../storage/db/runs.ts';
import { blobKey } from '../../storage/objects.ts';
import { hashStoredObject } from '../../storage/objectHash.ts';
import { checked, type CheckResult } from '../../storage/passportDocument.ts';
import type { CheckDeps } from './deps.ts';

/**
 * artifact_hashes: every artifact of the run streamed from the object store and hashed
 * now; the sha256 its row records is what is checked, never what is believed. A missing
 * object or other bytes fail the check, naming the artifact.
 */
export async function artifactHashes(deps: CheckDeps, runId: string): Promise<CheckResult> {
  const run = (await getRun(deps.db, runId))!;
  const artifacts = await listArtifacts(deps.db, runId);
  if (!artifacts.length) return checked('artifact_hashes', 'not_applicable', { reason: 'the run stored no artifacts', run_status: run.status, artifacts: [] });
  const rows = [];
  for (const a of artifacts) {
    const got = await hashStoredObject(deps.objects, blobKey(a.sha256), deps.beat);
    rows.push({ artifact_id: a.id, file_name: a.file_name, recorded_sha256: a.sha256, computed_sha256: got?.sha256 ?? null, size_bytes: Number(a.size_bytes) });
  }
  const bad = rows.filter((r) => r.computed_sha256 !== r.recorded_sha256).map((r) => r.artifact_id);
  // A run still storing artifacts may add more: what is there now matches, but it is not the whole.
  const status = bad.length ? 'failed' : TERMINAL.includes(run.status) ? 'passed' : 'unknown';
  return checked('artifact_hashes', status, { run_status: run.status, artifacts: rows, mismatched: bad });
}

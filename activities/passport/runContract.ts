import { parseManifestText } from '../../storage/labManifests.ts';
import type { RunRow } from '../../storage/db/runs.ts';
import { getReleaseById, type ContractInput, type ContractOutput } from '../../storage/db/releases.ts';
import { getRevisionById } from '../../storage/db/workspaces.ts';
import { blobKey } from '../../storage/objects.ts';
import { sha256Hex } from '../../storage/digest.ts';
import { contractOf } from '../../storage/labContract.ts';
import type { CheckDeps } from './deps.ts';

/** The contract a run ran under, or why it cannot be read back. */
export type RunContract = { inputs: ContractInput[]; outputs: ContractOutput[]; manifest: Record<string, unknown> } | { problem: string };

/**
 * The declared contract of what a run executed: its release's recorded contract, or the
 * lab.yaml of its revision read from the store (bytes checked against their address).
 */
export async function runContract(deps: CheckDeps, run: RunRow): Promise<RunContract> {
  if (run.kind === 'hub') {
    const release = run.release_id ? await getReleaseById(deps.db, run.release_id) : undefined;
    if (!release) return { problem: 'the run names no recorded release' };
    return { inputs: release.inputs, outputs: release.outputs, manifest: release.manifest };
  }
  const rev = run.revision_id ? await getRevisionById(deps.db, run.revision_id) : undefined;
  const file = rev?.tree['lab.yaml'];
  if (!file) return { problem: 'the run\'s revision has no lab.yaml' };
  const bytes = await deps.objects.getBytes(blobKey(file.sha256));
  if (sha256Hex(bytes) !== file.sha256) return { problem: 'the stored lab.yaml does not match its digest' };
  let manifest: Record<string, unknown>;
  try {
    manifest = parseManifestText(bytes.toString('utf8'));
  } catch (err) {
    return { problem: `lab.yaml does not parse: ${(err as Error).message.split('\n')[0]}` };
  }
  return { ...contractOf(manifest as never), manifest };
}

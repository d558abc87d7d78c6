import { getRun, listArtifacts, TERMINAL, type ArtifactRow, type RunRow } from '../../storage/db/runs.ts';
import { blobKey } from '../../storage/objects.ts';
import { storedBytesOrNull } from '../../storage/objectHash.ts';
import { digestJson, sha256Hex } from '../../storage/digest.ts';
import { isoTime } from '../../storage/ids.ts';
import { checkInputs, valueTypeProblem } from '../../storage/inputChecks.ts';
import { checked, type CheckResult } from '../../storage/passportDocument.ts';
import { runContract, type RunContract } from './runContract.ts';
import type { CheckDeps } from './deps.ts';

/** Values stored as artifacts are read back to check their type up to this size. */
const MAX_CHECKED_VALUE_BYTES = 64 * 1024 * 1024;

/** input_contract, execution_completed and output_contract of a run: its contract is read once for all three. */
export async function contractChecks(deps: CheckDeps, runId: string): Promise<CheckResult[]> {
  const run = (await getRun(deps.db, runId))!;
  const contract = await runContract(deps, run);
  return [inputContract(run, contract), executionCompleted(run), await outputContract(deps, run, contract)];
}

/** The run's inputs checked again, now, against the contract it ran under (storage/inputChecks.ts checkInputs). */
function inputContract(run: RunRow, c: RunContract): CheckResult {
  const base = { contract: run.resolved_ref, inputs_sha256: digestJson(run.inputs) };
  if ('problem' in c) return checked('input_contract', 'unknown', { ...base, reason: c.problem });
  const { unknown, findings } = checkInputs(c, run.inputs);
  const blocking = findings.filter((f) => f.severity === 'blocking');
  return checked('input_contract', unknown.length || blocking.length ? 'failed' : 'passed', { ...base, declared: c.inputs, unknown, findings: blocking });
}

/**
 * Whether execution ran to completion, as the run's record says (its status is the
 * workflow's own ending). A run answered from another (reuse) never executed: nothing is
 * claimed for it, and the source's own passport is where that execution is evidenced.
 */
function executionCompleted(run: RunRow): CheckResult {
  if (run.reused_from) {
    return checked('execution_completed', 'not_applicable', {
      reason: `the run did not execute: it was answered from the completed run ${run.reused_from} (reuse); that run's own passport evidences its execution`,
      reused_from: run.reused_from, run_status: run.status,
    });
  }
  const status = run.status === 'completed' ? 'passed' : TERMINAL.includes(run.status) ? 'failed' : 'unknown';
  return checked('execution_completed', status, { run_status: run.status, error: run.error, started_at: isoTime(run.started_at), finished_at: isoTime(run.finished_at) });
}

/**
 * Every declared output present with its declared type: public values from the run's
 * record, private ones from its private outputs artifact, values too large to keep
 * inline read back from their artifact (bytes checked against the reference), and a
 * timeseries output satisfied by its series artifact.
 */
async function outputContract(deps: CheckDeps, run: RunRow, c: RunContract): Promise<CheckResult> {
  if ('problem' in c) return checked('output_contract', 'unknown', { reason: c.problem });
  if (run.status !== 'completed') {
    if (run.error?.code === 'output_contract_violation') return checked('output_contract', 'failed', { run_status: run.status, error: run.error });
    return checked('output_contract', 'not_applicable', { reason: `the run is ${run.status}: it has no outputs to check`, run_status: run.status });
  }
  const artifacts = await listArtifacts(deps.db, run.id);
  const privateFile = artifacts.find((a) => a.file_name === 'private-outputs.json');
  const values: Record<string, unknown> = { ...(privateFile ? await storedJson(deps, privateFile.sha256) as Record<string, unknown> : {}), ...run.outputs };
  const outputs = [];
  for (const o of c.outputs) outputs.push({ name: o.name, value_type: o.value_type, ...await outputProblem(deps, o, values[o.name], artifacts) });
  const status = outputs.some((o) => o.problem) ? 'failed' : outputs.some((o) => o.problem === undefined) ? 'unknown' : 'passed';
  return checked('output_contract', status, { outputs });
}

async function outputProblem(deps: CheckDeps, o: { name: string; value_type: string }, value: unknown, artifacts: ArtifactRow[]): Promise<{ stored_as?: string; problem: string | null | undefined }> {
  const series = artifacts.find((a) => a.role === o.name && a.format === 'csv');
  if (o.value_type === 'timeseries' && series) return { stored_as: `series artifact ${series.id}`, problem: null };
  if (value === undefined || value === null) return { problem: 'missing' };
  const ref = (value as { artifact_ref?: { artifact_id?: string; sha256?: string } }).artifact_ref;
  const stored = ref && artifacts.find((a) => a.id === ref.artifact_id && a.sha256 === ref.sha256);
  if (!stored) return { stored_as: 'inline', problem: valueTypeProblem(o.value_type, value) };
  // Larger than is worth reading back: present, its type not checked (undefined: unknown).
  if (Number(stored.size_bytes) > MAX_CHECKED_VALUE_BYTES) return { stored_as: `artifact ${stored.id}`, problem: undefined };
  const read = await storedJson(deps, stored.sha256);
  return { stored_as: `artifact ${stored.id}`, problem: read === undefined ? 'its artifact does not match its digest' : valueTypeProblem(o.value_type, read) };
}

/** A JSON artifact's value, or undefined when the stored bytes are not the ones recorded. */
async function storedJson(deps: CheckDeps, sha256: string): Promise<unknown> {
  const bytes = await storedBytesOrNull(deps.objects, blobKey(sha256));
  if (!bytes || sha256Hex(bytes) !== sha256) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

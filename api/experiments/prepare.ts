import { randomInt } from 'node:crypto';
import type { Deps, Caller } from '../tools/tool.ts';
import { ApiError, errors } from '../errors.ts';
import { prepareRun, type RunProposal } from '../runs/prepare.ts';
import { studyCapFindings } from '../spendCaps.ts';
import type { Finding } from '../../storage/db/plans.ts';
import type { ExperimentArm } from '../../storage/db/experiments.ts';
import { contractOf } from '../../storage/inputChecks.ts';
import type { StudyDesign } from '../../storage/studyDesign.ts';

/** The largest seed a run takes (api/runs/operations.ts). */
export const MAX_SEED = 2147483646;

/** An arm as the caller asks for it. */
export interface ArmRequest {
  label: string;
  workspace_id: string;
  revision_id: string;
  inputs?: Record<string, unknown>;
  compute_profile_id?: string;
  max_runtime_seconds?: number;
  replicates?: number;
  seed?: number;
  fixed_seed?: boolean;
}

/** The approved content of a study: what its plan digests and POST /experiments executes. */
export interface ExperimentProposal {
  [k: string]: unknown;
  name: string;
  goal: string;
  arms: ExperimentArm[];
  run_count: number;
  estimated_max_micros: number;
  /** A study that answers a question (absent: arms compared). */
  kind?: StudyDesign['kind'];
  design?: StudyDesign;
}

/** The run a replicate of an arm is: the lone run its preparation proposed, with the replicate's seed. */
export function armRunProposal(arm: ExperimentArm, seed = arm.seed): RunProposal {
  return {
    kind: 'managed', ref: arm.resolved_ref, resolved_ref: arm.resolved_ref, release_id: null, workspace_id: arm.workspace_id, revision_id: arm.revision_id,
    package_sha256: arm.package_sha256, inputs: arm.inputs, compute_profile: arm.compute_profile, max_runtime_seconds: arm.max_runtime_seconds,
    estimated_max_micros: arm.estimated_max_micros, seed, ...(arm.runtime_sha256 ? { runtime_sha256: arm.runtime_sha256 } : {}),
  };
}

/** An error of one arm's preparation, answered with the arm in its `param`. */
function withinArm(err: unknown, at: string): unknown {
  if (!(err instanceof ApiError)) return err;
  return new ApiError(err.status, err.code, `${at}: ${err.message}`, err.param ? `${at}.${err.param}` : at, err.details, err.headers);
}

/**
 * Preflights every arm exactly as a lone run (rule 3: the run preparation, its findings
 * reported under the arm's path), plans each replicate's seed, and prices the whole study
 * as the sum of every run's maximum. Nothing is reserved or queued.
 */
export async function prepareExperiment(
  deps: Deps, caller: Caller, req: { name: string; goal?: string; arms: ArmRequest[] },
): Promise<{ proposal: ExperimentProposal; findings: Finding[] }> {
  const labels = new Set<string>();
  const arms: ExperimentArm[] = [];
  const findings: Finding[] = [];
  for (const [i, a] of req.arms.entries()) {
    const at = `arms[${i}]`;
    if (labels.has(a.label)) throw errors.validation('duplicate_arm_label', `Arm label ${JSON.stringify(a.label)} is used twice; labels name arms in the comparison.`, `${at}.label`);
    labels.add(a.label);
    const replicates = a.replicates ?? 1;
    const fixed = a.fixed_seed ?? false;
    if (fixed && a.seed === undefined) throw errors.validation('seed_required', 'fixed_seed needs the seed every replicate uses.', `${at}.seed`);
    if (a.seed !== undefined && !fixed && a.seed + replicates - 1 > MAX_SEED) {
      throw errors.validation('parameter_out_of_range', `Replicate seeds run from seed to seed + ${replicates - 1}, which must stay at most ${MAX_SEED}.`, `${at}.seed`);
    }
    const seed = a.seed ?? randomInt(0, MAX_SEED - 10);
    let prepared: Awaited<ReturnType<typeof prepareRun>>;
    try {
      prepared = await prepareRun(deps, caller, {
        refParam: 'workspace_id', workspace: { workspaceId: a.workspace_id, revisionId: a.revision_id }, inputs: a.inputs ?? {},
        profileId: a.compute_profile_id, profileParam: 'compute_profile_id', maxRuntimeSeconds: a.max_runtime_seconds, seed,
      });
    } catch (err) {
      throw withinArm(err, at);
    }
    const p = prepared.proposal;
    findings.push(...prepared.findings.map((f) => ({ ...f, path: f.path ? `${at}.${f.path}` : at })));
    arms.push({
      label: a.label, workspace_id: a.workspace_id, revision_id: a.revision_id, resolved_ref: p.resolved_ref, package_sha256: p.package_sha256,
      inputs: p.inputs, compute_profile: p.compute_profile, max_runtime_seconds: p.max_runtime_seconds, replicates, seed, fixed_seed: fixed,
      seeds: Array.from({ length: replicates }, (_, k) => (fixed ? seed : seed + k)), estimated_max_micros: p.estimated_max_micros, runtime_sha256: p.runtime_sha256,
      scalar_outputs: contractOf(prepared.release.manifest as never).outputs.filter((o) => o.value_type === 'number' || o.value_type === 'integer').map((o) => String(o.name)),
    });
  }
  const runCount = arms.reduce((n, a) => n + a.replicates, 0);
  const total = arms.reduce((sum, a) => sum + a.replicates * a.estimated_max_micros, 0);
  findings.push(...await studyCapFindings(deps, caller, arms, total));
  return {
    findings,
    proposal: { name: req.name, goal: req.goal ?? '', arms, run_count: runCount, estimated_max_micros: total },
  };
}

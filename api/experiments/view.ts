import type { ExperimentArm, ExperimentArtifact, ExperimentRow, ExperimentRunRow } from '../../storage/db/experiments.ts';
import type { Comparison } from '../../storage/experimentComparison.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { isoTime } from '../../storage/ids.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { fileUrl } from '../artifactUrls.ts';

const STATUSES = ['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'timed_out'] as const;

/** Runs per status, every status named (zero included), plus the total. */
export function runTotalsView(counts: Record<string, number> | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  let total = 0;
  for (const s of STATUSES) {
    out[s] = counts?.[s] ?? 0;
    total += out[s]!;
  }
  return { ...out, total };
}

/** An arm as approved: what each of its runs executes, and its per-run price. */
export function armView(arm: ExperimentArm, findings?: Finding[]) {
  return {
    label: arm.label, workspace_id: arm.workspace_id, revision_id: arm.revision_id, resolved_ref: arm.resolved_ref, package_sha256: arm.package_sha256,
    inputs: arm.inputs, compute_profile: arm.compute_profile, max_runtime_seconds: arm.max_runtime_seconds, replicates: arm.replicates,
    seed: arm.seed, fixed_seed: arm.fixed_seed, seeds: arm.seeds, estimated_max_usd_per_run: microsToUsd(arm.estimated_max_micros),
    ...(findings ? { findings } : {}),
  };
}

function artifactView(a: ExperimentArtifact, baseUrl: string) {
  return { ...a, download_url: fileUrl(baseUrl, a.file_id) };
}

/** A study as lists show it: its arms, run totals and money, without per-run detail. */
export function experimentSummary(e: ExperimentRow, counts: Record<string, number> | undefined, baseUrl: string) {
  return {
    object: 'experiment', kind: e.kind, id: e.id, experiment_id: e.id, name: e.name, goal: e.goal, status: e.status, plan_id: e.plan_id,
    arm_labels: e.arms.map((a) => a.label), workspace_ids: e.workspace_ids, run_totals: runTotalsView(counts),
    credits_reserved: microsToUsd(e.reserved_micros), artifacts: e.artifacts.map((a) => artifactView(a, baseUrl)),
    created_at: isoTime(e.created_at), updated_at: isoTime(e.updated_at), completed_at: isoTime(e.completed_at), closed_at: isoTime(e.closed_at),
  };
}

function runEntry(r: ExperimentRunRow) {
  return {
    run_id: r.run_id, replicate: r.replicate, seed: r.seed, status: r.status, error: r.error,
    credits_reserved: microsToUsd(r.reserved_micros), credits_settled: r.settled_micros === null ? null : microsToUsd(r.settled_micros),
  };
}

/**
 * A study in full: its arms, run totals, money settled so far, the comparison, design and
 * analysis, whatever its size; each arm's runs and the detached ones only when `runs` are
 * given (include_runs, for a study small enough to list them at once).
 */
export function experimentView(
  e: ExperimentRow, runs: ExperimentRunRow[] | null, counts: Record<string, number> | undefined, settledMicros: number, comparison: Comparison, baseUrl: string,
  include: { points: boolean } = { points: true },
) {
  const attached = runs?.filter((r) => !r.detached_at) ?? [];
  return {
    ...experimentSummary(e, counts, baseUrl),
    credits_settled: microsToUsd(settledMicros),
    arms: e.arms.map((arm, i) => (runs ? { ...armView(arm), runs: attached.filter((r) => r.arm_index === i).map(runEntry) } : armView(arm))),
    ...(runs ? { detached_runs: runs.filter((r) => r.detached_at).map((r) => ({ ...runEntry(r), arm: e.arms[r.arm_index]!.label, detached_at: isoTime(r.detached_at) })) } : {}),
    comparison,
    design: e.design,
    analysis: include.points ? e.analysis : withoutPoints(e.analysis),
  };
}

/** A PEtab calibration's analysis without its per-point lists (the waterfall, each profile's and fit's points); any other as it is. */
function withoutPoints(a: ExperimentRow['analysis']): ExperimentRow['analysis'] {
  if (a?.kind !== 'petab_calibration') return a;
  const rest = { ...a } as Record<string, unknown> & { profiles: Array<Record<string, unknown>>; fits: Array<Record<string, unknown>> };
  delete rest.waterfall;
  const withoutOwn = (x: Record<string, unknown>) => Object.fromEntries(Object.entries(x).filter(([k]) => k !== 'points'));
  return { ...rest, profiles: rest.profiles.map(withoutOwn), fits: rest.fits.map(withoutOwn) };
}

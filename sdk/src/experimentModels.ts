/**
 * Records of studies (experiments) as the API returns them. The OpenAPI document declares
 * no output schema for the experiment tools, so, like `models.ts` for runs, these mirror
 * the server's views (`api/experiments/view.ts`, `storage/experimentComparison.ts`).
 */
import type { Finding, RunPlan, RunStatus } from './models.ts';

/** A study's state: `running` until every run has ended, then `completed`; `closed` by the user. */
export type ExperimentStatus = 'running' | 'completed' | 'closed';

/** One arm of a study as proposed (POST /experiment-plans). */
export interface ExperimentArmParams {
  /** Unique within the study, 1-100 characters. */
  label: string;
  workspace_id: string;
  revision_id: string;
  inputs?: Record<string, unknown>;
  compute_profile_id?: string;
  max_runtime_seconds?: number;
  /** Runs of this arm, 1-10 (default 1). */
  replicates?: number;
  /** Replicate k runs with seed + k (chosen at plan time when absent). */
  seed?: number;
  /** Every replicate runs with `seed` itself (to check reproducibility). */
  fixed_seed?: boolean;
}

/** POST /experiment-plans. */
export interface ExperimentPlanParams {
  name: string;
  goal?: string;
  /** 1-20 arms. */
  arms: ExperimentArmParams[];
}

/** PATCH /experiments/{id}: any of these (at least one). Deletes nothing. */
export interface ExperimentUpdateParams {
  name?: string;
  goal?: string;
  /** Ends the study: no new runs; queued runs are cancelled. */
  status?: 'closed';
  /** With `status: 'closed'`: also cancel runs already running (only elapsed compute is charged). */
  cancel_running?: boolean;
  /** Runs that stop counting in the study's totals and comparison (they keep their records). */
  detach_run_ids?: string[];
}

/** An arm as approved: what each of its runs executes, and its per-run price. */
export interface ExperimentArm {
  label: string;
  workspace_id: string;
  revision_id: string;
  resolved_ref: string;
  package_sha256: string;
  inputs: Record<string, unknown>;
  compute_profile: string;
  max_runtime_seconds: number;
  replicates: number;
  seed: number;
  fixed_seed: boolean;
  /** The seed of each replicate, in order. */
  seeds: number[];
  estimated_max_usd_per_run: number;
}

/** POST /experiment-plans: the whole proposal, priced and digested, to approve before POST /experiments. */
export interface ExperimentPlan extends Pick<RunPlan, 'plan_id' | 'plan_sha256' | 'expires_at' | 'status' | 'findings' | 'digest_input'> {
  object: 'experiment_plan';
  name: string;
  goal: string | null;
  arms: Array<ExperimentArm & { findings: Finding[] }>;
  /** Arms x replicates. */
  run_count: number;
  /** The whole study's maximum (the sum of every run's), reserved when it opens. */
  estimated_max_usd: number;
}

/** A study's runs per status (every status named, zero included) and their total. */
export type RunTotals = Record<RunStatus, number> & { total: number };

/** One run of a study. */
export interface ExperimentRun {
  run_id: string;
  replicate: number;
  seed: number;
  status: RunStatus;
  error: { code: string; message: string } | null;
  credits_reserved: number;
  credits_settled: number | null;
}

/** One arm's summary of one numeric scalar output; spread and interval need two runs. */
export interface OutputMetrics {
  n: number;
  mean: number;
  stddev: number | null;
  min: number;
  max: number;
  /** The 95% confidence interval of the mean (Student t). */
  ci95: [number, number] | null;
}

/** A descriptive Welch t-test of arm 0 against arm 1 (studies of exactly two arms). */
export interface WelchTest {
  output: string;
  method: 'welch_t_test';
  statistic: number | null;
  df: number | null;
  p_value: number | null;
  descriptive: true;
  /** Why there is no p-value, when there is none. */
  note?: string;
}

/** The comparison across arms, from completed attached runs only (descriptive). */
export interface Comparison {
  descriptive: true;
  note: string;
  confidence_level: number;
  /** The numeric scalar outputs compared. */
  outputs: string[];
  /** `metrics` is null for an arm without a completed run. */
  arms: Array<{ label: string; completed_runs: number; metrics: Record<string, OutputMetrics> | null }>;
  tests: WelchTest[];
}

/** A stored file of the study (comparison CSV, chart). */
export interface ExperimentArtifact {
  file_id: string;
  file_name: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  download_url: string;
}

/** A study as lists show it (GET /experiments items). */
export interface ExperimentSummary {
  object: 'experiment';
  id: string;
  experiment_id: string;
  name: string;
  goal: string | null;
  status: ExperimentStatus;
  plan_id: string;
  arm_labels: string[];
  workspace_ids: string[];
  run_totals: RunTotals;
  credits_reserved: number;
  artifacts: ExperimentArtifact[];
  created_at: string;
  updated_at: string;
  /** Set once every run has ended (the status may be `closed` then). */
  completed_at: string | null;
  closed_at: string | null;
}

/** A study in full (GET/PATCH /experiments/{id}, POST /experiments). */
export interface Experiment extends ExperimentSummary {
  credits_settled: number;
  arms: Array<ExperimentArm & { runs: ExperimentRun[] }>;
  detached_runs: Array<ExperimentRun & { arm: string; detached_at: string }>;
  comparison: Comparison;
}

/** Every run of the study has ended (the study is completed, or closed and drained). */
export function isStudyFinished(e: Pick<ExperimentSummary, 'completed_at'>): boolean {
  return e.completed_at !== null && e.completed_at !== undefined;
}

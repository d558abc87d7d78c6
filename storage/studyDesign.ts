/**
 * The approved design of a study that answers a question (migration 040's `design`):
 * what its plan digests and its workflow executes. Shared by the api (which prepares it),
 * the activities (which execute it) and the views.
 */
import { SENSITIVITY_METHODS, type SensitivityMethod } from '../kernel/sensitivityMethods.ts';

/** The most runs one study may ask for. */
export const MAX_STUDY_RUNS = 100_000;

/**
 * The most times a sensitivity study states indices at, over all its `series` outputs:
 * its analysis (every parameter's indices and half-widths at each) stays a few MB.
 */
export const MAX_TIME_POINTS = 1_000;

/**
 * The most values a time-resolved study tells its analysis (runs × times, over its
 * `series` outputs): each run's series at the grid is kept with its point, and the
 * analysis holds them all at once in the worker (some 40 MB of JSON at the bound).
 */
export const MAX_TIME_RESOLVED_VALUES = 2_000_000;

/** A parameter the study varies: a numeric input of the lab, within bounds its schema accepts. */
export interface StudyParameter {
  name: string;
  low: number;
  high: number;
  /** Sampling distribution (sensitivity only): uniform over [low, high], or a normal truncated to it. */
  distribution: 'uniform' | 'normal';
  mean?: number;
  sd?: number;
}

/**
 * How a run's output becomes what the study analyses: a scalar as it is, a time series
 * summarised to one number, or (`series`) the series at each time of a grid, for indices
 * over time.
 */
export type OutputSummary = 'value' | 'final' | 'max' | 'mean' | 'time_of_max' | 'series';

export interface StudyOutput {
  output: string;
  summary: OutputSummary;
  /** The output's declared value type in the lab's contract. */
  value_type: string;
  units: string | null;
  /**
   * `series` only: the times its indices are stated at, or null for the series' own times
   * (as the study's first completed run gives them).
   */
  times?: number[] | null;
}

export interface SensitivityDesign {
  kind: 'sensitivity';
  parameters: StudyParameter[];
  outputs: StudyOutput[];
  method: SensitivityMethod;
  base_sample: number;
  /** Morris's grid levels (unused by Sobol'). */
  num_levels: number;
  /** Bootstrap resamples behind each confidence interval. */
  num_resamples: number;
  seed: number;
  run_count: number;
}

/** Observations of one output of the lab, at time points. */
export interface ObservedSeries { output: string; column: string; units: string | null; t: number[]; y: number[] }

export interface CalibrationDesign {
  kind: 'calibration';
  parameters: StudyParameter[];
  dataset: { dataset_id: string; name: string; version: number; manifest_sha256: string; member: { file_id: string; sha256: string; sample_id: string } };
  observations: ObservedSeries[];
  loss: 'sum_of_squares' | 'gaussian_nll';
  /** σ of the Gaussian likelihood; null: estimated with the parameters (its maximum-likelihood value). */
  noise_sd: number | null;
  optimizer: 'cmaes' | 'tpe';
  budget: number;
  batch_size: number;
  seed: number;
  /** Stops before the budget when the best loss improved by less than this fraction over `patience_batches` batches. */
  stop: { patience_batches: number; relative_tolerance: number } | null;
  run_count: number;
}

/** An estimated parameter of a PEtab problem: its scale, and its bounds and nominal value on that scale. */
export interface PetabParameter { id: string; scale: string; lb: number; ub: number; nominal: number }

/** What one run of a PEtab calibration carries (its point's `attrs`). */
export type PetabTask =
  | { command: 'optimize'; starts: Array<{ index: number; x0: number[] }> }
  | { command: 'profile'; x: number[]; parameters: string[]; hessian: boolean };

/** What one start of a PEtab calibration ended with, as its run records it (and its study is told). */
export interface PetabStartEnd { index: number; fval: number | null; x: number[] | null; n_fval: number; ended: string; message: string; seconds: number; evaluations_sha256: string | null }

/** The phase of a PEtab run's progress events: each start's best so far and its end, what a later execution of the run resumes from. */
export const PETAB_PHASE = 'petab';

/**
 * The calibration of an imported PEtab problem: multi-start local optimisation of PEtab's
 * negative log-likelihood, then profiles and the Gauss-Newton view at the best end point.
 * Batch 0 is the starts, `starts_per_run` to a run; batch 1 the profiles, spread over
 * `profile_runs` runs, the first also taking the Hessian.
 */
export interface PetabCalibrationDesign {
  kind: 'petab_calibration';
  import_id: string;
  /** The problem's YAML, relative to the lab's `petab/` folder. */
  yaml: string;
  /** The problem's files as imported, with their digests. */
  files: Array<{ path: string; sha256: string }>;
  parameters: PetabParameter[];
  optimizer: 'fides' | 'lbfgsb';
  starts: number;
  starts_per_run: number;
  /** The most evaluations of the NLL one start makes. */
  max_evaluations: number;
  seed: number;
  /** The estimated parameters profiled, and pyPESTO's profile step options. */
  profile: { parameters: string[]; options: Record<string, number> };
  profile_runs: number;
  run_count: number;
}

/** The study file a finished PEtab calibration exports its problem in, nominal at its best point. */
export const PETAB_EXPORT = 'petab-export.zip';

export type StudyDesign = SensitivityDesign | CalibrationDesign | PetabCalibrationDesign;

/** Runs a sensitivity design takes (storage/sensitivityMethods.ts): Saltelli's N(D + 2) without second-order terms, Morris's r(D + 1), eFAST's N·D, N for a Latin hypercube. */
export function sensitivityRunCount(method: SensitivityMethod, baseSample: number, parameters: number): number {
  return SENSITIVITY_METHODS[method].runs(baseSample, parameters);
}

/** The key of an output's number in a point's outcome: `recovered` or `recovered.max`. */
export function outputKey(o: { output: string; summary: OutputSummary }): string {
  return o.summary === 'value' ? o.output : `${o.output}.${o.summary}`;
}

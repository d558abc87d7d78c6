/**
 * The approved design of a study that answers a question (migration 040's `design`):
 * what its plan digests and its workflow executes. Shared by the api (which prepares it),
 * the activities (which execute it) and the views.
 */

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

/** How a run's output becomes one number: a scalar as it is, a time series summarised. */
export type OutputSummary = 'value' | 'final' | 'max' | 'mean' | 'time_of_max';

export interface StudyOutput {
  output: string;
  summary: OutputSummary;
  /** The output's declared value type in the lab's contract. */
  value_type: string;
  units: string | null;
}

export interface SensitivityDesign {
  kind: 'sensitivity';
  parameters: StudyParameter[];
  outputs: StudyOutput[];
  method: 'sobol' | 'morris';
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

export type StudyDesign = SensitivityDesign | CalibrationDesign;

/** Runs a sensitivity design takes: Saltelli's N(D + 2) without second-order terms; Morris's r(D + 1). */
export function sensitivityRunCount(method: 'sobol' | 'morris', baseSample: number, parameters: number): number {
  return method === 'sobol' ? baseSample * (parameters + 2) : baseSample * (parameters + 1);
}

/** The key of an output's number in a point's outcome: `recovered` or `recovered.max`. */
export function outputKey(o: { output: string; summary: OutputSummary }): string {
  return o.summary === 'value' ? o.output : `${o.output}.${o.summary}`;
}

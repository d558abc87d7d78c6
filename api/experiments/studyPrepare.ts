import { randomInt } from 'node:crypto';
import { parse as parseCsv } from 'csv-parse/sync';
import type { Deps, Caller } from '../tools/tool.ts';
import { ApiError, errors } from '../errors.ts';
import { prepareRun, unknownInputsError } from '../runs/prepare.ts';
import { studyCapFindings } from '../spendCaps.ts';
import type { Finding } from '../../storage/db/plans.ts';
import type { ExperimentArm } from '../../storage/db/experiments.ts';
import { getDataset, filesById } from '../../storage/db/datasets.ts';
import { checkInputs, type Contracted } from '../../storage/inputChecks.ts';
import { SENSITIVITY_METHODS, type SensitivityMethod } from '../../kernel/sensitivityMethods.ts';
import { listOf } from '../../storage/labContract.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { sampleSizeAdvice } from '../../storage/sampleSize.ts';
import {
  MAX_STUDY_RUNS, MAX_TIME_POINTS, MAX_TIME_RESOLVED_VALUES, sensitivityRunCount, type CalibrationDesign, type ObservedSeries, type OutputSummary, type SensitivityDesign, type StudyDesign, type StudyOutput, type StudyParameter,
} from '../../storage/studyDesign.ts';
import { MAX_SEED, type ExperimentProposal } from './prepare.ts';
import { petabCalibrationDesign, petabStudyLab, type PetabCalibrationRequest } from './petabPrepare.ts';

/** The largest observation table a calibration reads. */
const MAX_OBSERVATION_BYTES = 4 << 20;

/** The lab a sensitivity or calibration study varies, as the caller names it. */
export interface StudyLabRequest {
  workspace_id: string;
  revision_id: string;
  inputs?: Record<string, unknown>;
  compute_profile_id?: string;
  max_runtime_seconds?: number;
  seed?: number;
}

interface ParameterRequest { input: string; low: number; high: number; distribution?: 'uniform' | 'normal'; mean?: number; sd?: number }

export interface SensitivityRequest {
  parameters: ParameterRequest[];
  outputs: Array<{ output: string; summary?: OutputSummary; times?: number[] }>;
  method: SensitivityMethod;
  base_sample: number;
  num_levels?: number;
  seed?: number;
}

export interface CalibrationRequest {
  parameters: ParameterRequest[];
  dataset_id: string;
  sample_id?: string;
  observations: Array<{ output: string; column?: string }>;
  loss: 'sum_of_squares' | 'gaussian_nll';
  noise_sd?: number;
  optimizer: 'cmaes' | 'tpe';
  budget: number;
  batch_size: number;
  seed?: number;
  stop?: { patience_batches: number; relative_tolerance: number };
}

type Manifest = { io?: { inputs?: unknown; outputs?: unknown }; runtime?: { duration?: unknown; communication_step?: unknown } };
interface Declared { name: string; value_type?: string; units?: string }

const declared = (manifest: Manifest, side: 'inputs' | 'outputs'): Declared[] => listOf(manifest.io?.[side] as Declared[] | undefined).filter((d) => d && typeof d.name === 'string');

/** A lookup of the lab's declared outputs: an undeclared name is a 422 `unknown_output` at `param`. */
function outputsOf(release: Contracted): (name: string, param: string) => Declared {
  const outputs = new Map(declared(release.manifest as Manifest, 'outputs').map((d) => [d.name, d]));
  return (name, param) => {
    const d = outputs.get(name);
    if (!d) throw errors.validation('unknown_output', `${name} is not an output the lab declares.`, param);
    return d;
  };
}

/**
 * Checks each varied parameter against the lab's contract: a declared number input, named
 * once, whose schema accepts both bounds (so every value sampled between them is valid).
 */
function studyParameters(
  release: Contracted, base: Record<string, unknown>, req: ParameterRequest[], at: string, opts: { distributions: boolean },
): StudyParameter[] {
  const inputs = new Map(declared(release.manifest as Manifest, 'inputs').map((d) => [d.name, d]));
  const seen = new Set<string>();
  return req.map((p, i) => {
    const here = `${at}.parameters[${i}]`;
    const d = inputs.get(p.input);
    if (!d) throw unknownInputsError(release, [p.input], `${p.input} is not an input the lab declares.`, `${here}.input`);
    if (d.value_type !== 'number') throw errors.validation('parameter_not_numeric', `Input ${p.input} is declared ${d.value_type ?? 'object'}; a study varies number inputs only.`, `${here}.input`);
    if (seen.has(p.input)) throw errors.validation('duplicate_parameter', `Input ${p.input} is varied twice.`, `${here}.input`);
    seen.add(p.input);
    if (!(p.low < p.high)) throw errors.validation('parameter_out_of_range', `low (${p.low}) must be below high (${p.high}).`, `${here}.high`);
    for (const bound of ['low', 'high'] as const) {
      const bad = checkInputs(release, { ...base, [p.input]: p[bound] }).findings.find((f) => f.path?.startsWith(`inputs.${p.input}`));
      if (bad) throw errors.validation('parameter_out_of_range', `${bound} = ${p[bound]}: ${bad.message}`, `${here}.${bound}`);
    }
    const distribution = p.distribution ?? 'uniform';
    if (distribution === 'normal') {
      if (!opts.distributions) throw errors.validation('parameter_not_allowed', 'Only a Sobol\' sensitivity study samples from a distribution; this one is uniform between low and high.', `${here}.distribution`);
      if (p.mean === undefined || p.sd === undefined) throw errors.validation('parameter_requires', 'A normal distribution needs its mean and sd (it is truncated to [low, high]).', `${here}.${p.mean === undefined ? 'mean' : 'sd'}`);
      if (!(p.sd > 0)) throw errors.validation('parameter_out_of_range', 'sd must be above 0.', `${here}.sd`);
      return { name: p.input, low: p.low, high: p.high, distribution, mean: p.mean, sd: p.sd };
    }
    if (p.mean !== undefined || p.sd !== undefined) throw errors.validation('parameter_requires', 'mean and sd belong to distribution: normal.', `${here}.${p.mean !== undefined ? 'mean' : 'sd'}`);
    return { name: p.input, low: p.low, high: p.high, distribution };
  });
}

/** The lab's run as its manifest declares it: how long, and how often its series are sampled (null when it does not say). */
function runSpan(release: Contracted): { duration: number; step: number | null } {
  const runtime = (release.manifest as Manifest).runtime;
  const step = Number(runtime?.communication_step);
  return { duration: Number(runtime?.duration ?? Infinity), step: Number.isFinite(step) && step > 0 ? step : null };
}

/**
 * A `series` output's grid, checked: increasing times within what the run samples, from
 * the end of its first step (the runtime samples after each step, never at t = 0) to its
 * duration. Returns the grid (null for the series' own times) and how many times it has,
 * or is expected to have (one a step, for the study's bound on what it tells its analysis).
 */
function seriesGrid(release: Contracted, times: number[] | undefined, here: string): { times: number[] | null; count: number } {
  const { duration, step } = runSpan(release);
  if (!times) return { times: null, count: step && Number.isFinite(duration) ? Math.max(1, Math.floor(duration / step + 1e-9)) : 1 };
  const first = step ?? 0;
  times.forEach((t, j) => {
    if (t < first || t > duration) {
      throw errors.validation('parameter_out_of_range', `Time ${t} is outside what the lab's run samples (${first} to ${duration}${step ? `: a value after each step of ${step}, none at 0` : ''}).`, `${here}.times[${j}]`);
    }
    if (j > 0 && !(t > times[j - 1]!)) throw errors.validation('parameter_out_of_range', `times must increase: ${t} follows ${times[j - 1]}.`, `${here}.times[${j}]`);
  });
  return { times, count: times.length };
}

function sensitivityDesign(release: Contracted, base: Record<string, unknown>, req: SensitivityRequest): SensitivityDesign {
  const at = 'sensitivity';
  const method = SENSITIVITY_METHODS[req.method];
  const parameters = studyParameters(release, base, req.parameters, at, { distributions: method.distributions });
  const output = outputsOf(release);
  const keys = new Set<string>();
  let timePoints = 0;
  const studied: StudyOutput[] = req.outputs.map((o, i) => {
    const here = `${at}.outputs[${i}]`;
    const d = output(o.output, `${here}.output`);
    const series = d.value_type === 'timeseries';
    if (!series && d.value_type !== 'number' && d.value_type !== 'integer') {
      throw errors.validation('output_not_numeric', `Output ${o.output} is declared ${d.value_type ?? 'object'}; a sensitivity study reads numbers or time series.`, `${here}.output`);
    }
    const summary = o.summary ?? (series ? 'final' : 'value');
    if (series === (summary === 'value')) {
      throw errors.validation('parameter_out_of_range', series ? `Output ${o.output} is a time series: summarise it (final, max, mean or time_of_max) or take its indices over time (series).` : `Output ${o.output} is a number: its summary is value.`, `${here}.summary`);
    }
    if (o.times && summary !== 'series') throw errors.validation('parameter_not_allowed', 'times belong to the series summary: indices at each time.', `${here}.times`);
    const key = `${o.output}.${summary}`;
    if (keys.has(key)) throw errors.validation('duplicate_output', `${o.output} (${summary}) is asked for twice.`, `${here}.output`);
    keys.add(key);
    // δ's kernels need a continuous output: an integer's or a time of maximum's few distinct values leave them singular.
    if (req.method === 'delta' && (d.value_type === 'integer' || summary === 'time_of_max')) {
      throw errors.validation('parameter_not_allowed', `Borgonovo's δ estimates the output's density by kernels, which ${summary === 'time_of_max' ? 'a time of maximum (one of the run\'s step times)' : `an integer output (${o.output})`} leaves singular: use pawn, which compares distributions without a density.`, `${here}.${summary === 'time_of_max' ? 'summary' : 'output'}`);
    }
    const studiedOutput: StudyOutput = { output: o.output, summary, value_type: d.value_type!, units: d.units ?? null };
    if (summary !== 'series') return studiedOutput;
    const grid = seriesGrid(release, o.times, here);
    timePoints += grid.count;
    if (timePoints > MAX_TIME_POINTS) throw errors.validation('parameter_out_of_range', `Indices are stated at most at ${MAX_TIME_POINTS} times over a study; this asks for ${timePoints} by here${o.times ? '' : ' (the series\' own times, one a step of the run)'}: name fewer times.`, `${here}.${o.times ? 'times' : 'summary'}`);
    return { ...studiedOutput, times: grid.times };
  });
  if (req.method === 'sobol' && (req.base_sample & (req.base_sample - 1)) !== 0) {
    throw errors.validation('parameter_out_of_range', `Saltelli's scheme keeps its balance only for a base sample that is a power of 2 (${2 ** Math.round(Math.log2(req.base_sample))}?).`, `${at}.base_sample`);
  }
  if (req.base_sample < method.minBase) {
    throw errors.validation('parameter_out_of_range', `${method.title} takes a base sample of at least ${method.minBase}: ${method.minReason}.`, `${at}.base_sample`);
  }
  const numLevels = req.num_levels ?? 4;
  if (req.method === 'morris' && numLevels % 2 !== 0) throw errors.validation('parameter_out_of_range', 'Morris\'s grid needs an even number of levels.', `${at}.num_levels`);
  if (req.method !== 'morris' && req.num_levels !== undefined) throw errors.validation('parameter_not_allowed', 'num_levels belongs to the morris method.', `${at}.num_levels`);
  const runCount = sensitivityRunCount(req.method, req.base_sample, parameters.length);
  if (runCount > MAX_STUDY_RUNS) throw errors.validation('study_too_large', `This design takes ${runCount} runs; a study takes at most ${MAX_STUDY_RUNS}.`, `${at}.base_sample`);
  if (runCount * timePoints > MAX_TIME_RESOLVED_VALUES) {
    throw errors.validation('study_too_large', `${runCount} runs at ${timePoints} times are ${runCount * timePoints} values for the analysis; a study tells it at most ${MAX_TIME_RESOLVED_VALUES}: fewer times or a smaller sample.`, `${at}.base_sample`);
  }
  return {
    kind: 'sensitivity', parameters, outputs: studied, method: req.method, base_sample: req.base_sample, num_levels: numLevels, num_resamples: 100,
    seed: req.seed ?? randomInt(0, MAX_SEED), run_count: runCount,
  };
}

/**
 * A sensitivity design whose sample is too small for stable indices (storage/sampleSize.ts):
 * the confidence half-width it leaves, the base sample that meets the target, and that
 * sample's runs and price at one run's maximum.
 */
function sampleSizeFinding(d: SensitivityDesign, perRunMicros: number): Finding | null {
  const advice = sampleSizeAdvice(d.method, d.base_sample, d.parameters.length, MAX_STUDY_RUNS);
  if (!advice) return null;
  const sobol = d.method === 'sobol';
  const now = sobol
    ? `A base sample of ${d.base_sample} leaves each Sobol' index a 95% confidence half-width of up to about ±${advice.half_width.toFixed(2)}`
    : `${d.base_sample} trajectories leave μ* a 95% confidence half-width of up to about ±${Math.round(advice.half_width * 100)}% of itself (for a parameter whose σ is as large as its μ*)`;
  const target = sobol ? `±${advice.target}` : `±${advice.target * 100}%`;
  const cost = advice.parameters_within === null
    ? `${advice.suggested_run_count} runs, at most $${microsToUsd(advice.suggested_run_count * perRunMicros)}`
    : `${advice.suggested_run_count} runs, more than the ${MAX_STUDY_RUNS} a study may take: vary at most ${advice.parameters_within} parameters (each adds ${advice.suggested} runs)${sobol ? ', or screen them first with method morris' : ''}`;
  return {
    severity: 'warning', code: 'sample_too_small', path: 'sensitivity.base_sample',
    message: `${now}; base_sample ${advice.suggested} brings it within ${target}, the target for stable indices: ${cost}.`,
  };
}

/** The observation table of a calibration: a registered dataset version's table member, read and checked. */
async function observationsOf(
  deps: Deps, caller: Caller, release: Contracted, req: CalibrationRequest,
): Promise<Pick<CalibrationDesign, 'dataset' | 'observations'>> {
  const at = 'calibration';
  const ds = await getDataset(deps.db, req.dataset_id, caller.account.id);
  if (!ds) throw errors.notFound('dataset_not_found', 'dataset', `${at}.dataset_id`);
  if (ds.status !== 'registered') {
    throw new ApiError(409, 'dataset_not_registered', `Dataset ${ds.name} version ${ds.version} is ${ds.status}: only a registered version (its bytes verified) can be calibrated against.`, `${at}.dataset_id`);
  }
  const tables = (ds.manifest.members as Array<{ file_id: string; sha256: string; sample_id: string; role: string }>)
    .filter((m) => m.role === 'table' && (req.sample_id === undefined || m.sample_id === req.sample_id));
  if (tables.length !== 1) {
    throw errors.validation('observations_invalid', tables.length
      ? `The dataset has ${tables.length} table members${req.sample_id ? ` for sample ${req.sample_id}` : ''}: name one with sample_id.`
      : `The dataset has no table member${req.sample_id ? ` for sample ${req.sample_id}` : ''} to read observations from.`, req.sample_id ? `${at}.sample_id` : `${at}.dataset_id`);
  }
  const member = tables[0]!;
  const file = (await filesById(deps.db, caller.account.id, [member.file_id])).get(member.file_id);
  if (!file || file.sha256 !== member.sha256) throw errors.validation('observations_invalid', 'The table member\'s file is no longer the one the version registered.', `${at}.dataset_id`);
  if (Number(file.size_bytes) > MAX_OBSERVATION_BYTES) throw errors.validation('observations_invalid', `The observation table is over ${MAX_OBSERVATION_BYTES >> 20} MiB.`, `${at}.dataset_id`);
  let rows: Record<string, string>[];
  try {
    rows = parseCsv(await deps.objects.getBytes(file.object_key), { columns: true, skip_empty_lines: true, trim: true });
  } catch (err) {
    throw errors.validation('observations_invalid', `The observation table is not CSV with a header: ${(err as Error).message}`, `${at}.dataset_id`);
  }
  const header = Object.keys(rows[0] ?? {});
  const timeColumn = header.find((h) => h === 't' || h === 'time');
  if (!timeColumn) throw errors.validation('observations_invalid', `The observation table needs a time column named t or time; it has ${header.join(', ') || 'none'}.`, `${at}.dataset_id`);
  const duration = Number((release.manifest as Manifest).runtime?.duration ?? Infinity);
  const output = outputsOf(release);
  const seen = new Set<string>();
  const observations: ObservedSeries[] = req.observations.map((o, i) => {
    const here = `${at}.observations[${i}]`;
    const d = output(o.output, `${here}.output`);
    if (d.value_type !== 'timeseries') throw errors.validation('output_not_numeric', `Output ${o.output} is declared ${d.value_type ?? 'object'}; observations are compared with a time series.`, `${here}.output`);
    if (seen.has(o.output)) throw errors.validation('duplicate_output', `${o.output} is observed twice.`, `${here}.output`);
    seen.add(o.output);
    const column = o.column ?? o.output;
    if (!header.includes(column)) throw errors.validation('observations_invalid', `The observation table has no column ${column} (it has ${header.join(', ')}).`, `${here}.column`);
    const t: number[] = [];
    const y: number[] = [];
    for (const [r, row] of rows.entries()) {
      if (row[column] === '' || row[column] === undefined) continue; // not observed at this time
      const time = Number(row[timeColumn]);
      const value = Number(row[column]);
      if (!Number.isFinite(time) || !Number.isFinite(value)) throw errors.validation('observations_invalid', `Row ${r + 2} of the table is not numeric in ${timeColumn} or ${column}.`, `${here}.column`);
      if (time < 0 || time > duration) throw errors.validation('observations_invalid', `Row ${r + 2} observes time ${time}, outside the lab's run (0 to ${duration}).`, `${here}.column`);
      t.push(time);
      y.push(value);
    }
    return { output: o.output, column, units: d.units ?? null, t, y };
  });
  const points = observations.reduce((n, o) => n + o.t.length, 0);
  if (points <= req.parameters.length) throw errors.validation('observations_invalid', `${points} observations cannot determine ${req.parameters.length} parameters.`, `${at}.observations`);
  return {
    dataset: { dataset_id: ds.id, name: ds.name, version: ds.version, manifest_sha256: ds.manifest_sha256, member: { file_id: member.file_id, sha256: member.sha256, sample_id: member.sample_id } },
    observations,
  };
}

async function calibrationDesign(
  deps: Deps, caller: Caller, release: Contracted, base: Record<string, unknown>, req: CalibrationRequest,
): Promise<CalibrationDesign> {
  const at = 'calibration';
  const parameters = studyParameters(release, base, req.parameters, at, { distributions: false });
  if (req.batch_size > req.budget) throw errors.validation('parameter_out_of_range', `batch_size (${req.batch_size}) cannot exceed the budget (${req.budget} runs).`, `${at}.batch_size`);
  if (req.budget > MAX_STUDY_RUNS) throw errors.validation('study_too_large', `A study takes at most ${MAX_STUDY_RUNS} runs.`, `${at}.budget`);
  if (req.noise_sd !== undefined && req.loss !== 'gaussian_nll') throw errors.validation('parameter_not_allowed', 'noise_sd belongs to the gaussian_nll loss.', `${at}.noise_sd`);
  return {
    kind: 'calibration', parameters, ...await observationsOf(deps, caller, release, req), loss: req.loss, noise_sd: req.noise_sd ?? null,
    optimizer: req.optimizer, budget: req.budget, batch_size: req.batch_size, seed: req.seed ?? randomInt(0, MAX_SEED), stop: req.stop ?? null, run_count: req.budget,
  };
}

/**
 * Prepares a study that answers a question: the lab is preflighted as a lone run would be
 * (with its fixed inputs), its design checked against the lab's contract and, for
 * a calibration, against the dataset version's observations; the price is the design's
 * largest run count times one run's maximum. Nothing is reserved or queued.
 */
export async function prepareStudy(
  deps: Deps, caller: Caller,
  req: { name: string; goal?: string; lab?: StudyLabRequest; sensitivity?: SensitivityRequest; calibration?: CalibrationRequest; petab_calibration?: PetabCalibrationRequest },
): Promise<{ proposal: ExperimentProposal; findings: Finding[] }> {
  // A PEtab calibration's lab is its import's; its run settings are in its own block.
  const petab = req.petab_calibration ? await petabStudyLab(deps, caller, req.petab_calibration) : null;
  const lab = petab?.lab ?? req.lab!;
  const at = petab ? 'petab_calibration' : 'lab';
  const base = lab.inputs ?? {};
  const varied = (req.sensitivity ?? req.calibration)?.parameters ?? [];
  const seed = lab.seed ?? randomInt(0, MAX_SEED - 10);
  let prepared: Awaited<ReturnType<typeof prepareRun>>;
  try {
    prepared = await prepareRun(deps, caller, {
      refParam: 'workspace_id', workspace: { workspaceId: lab.workspace_id, revisionId: lab.revision_id },
      inputs: base,
      profileId: lab.compute_profile_id, profileParam: 'compute_profile_id', maxRuntimeSeconds: lab.max_runtime_seconds, seed,
    });
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    throw new ApiError(err.status, err.code, err.message, err.param ? `${at}.${err.param}` : at, err.details, err.headers);
  }
  const release: Contracted = prepared.release;
  const design: StudyDesign = req.sensitivity ? sensitivityDesign(release, base, req.sensitivity)
    : petab ? petabCalibrationDesign(petab.row, req.petab_calibration!)
      : await calibrationDesign(deps, caller, release, base, req.calibration!);
  const p = prepared.proposal;
  // The lab's findings, under `lab`: not whether an identical lone run exists (nothing to
  // a study), nor a varied input's absence (studyParameters checked both its bounds).
  const variedPaths = new Set(varied.map((p) => `inputs.${p.input}`));
  const findings: Finding[] = prepared.findings.filter((f) => f.path !== 'reuse' && !variedPaths.has(f.path ?? ''))
    .map((f) => ({ ...f, path: f.path ? `lab.${f.path}` : 'lab' }));
  const arm: ExperimentArm = {
    label: design.kind, workspace_id: lab.workspace_id, revision_id: lab.revision_id, resolved_ref: p.resolved_ref, package_sha256: p.package_sha256,
    inputs: base, compute_profile: p.compute_profile, max_runtime_seconds: p.max_runtime_seconds, replicates: 1, seed, fixed_seed: true, seeds: [seed],
    estimated_max_micros: p.estimated_max_micros, runtime_sha256: p.runtime_sha256, scalar_outputs: [],
  };
  const total = design.run_count * arm.estimated_max_micros;
  const capped = await studyCapFindings(deps, caller, [{ ...arm, replicates: design.run_count }], total);
  findings.push(...capped.map((f) => ({ ...f, path: f.path?.replace(/^arms\[0\]/, 'lab') ?? null })));
  const small = design.kind === 'sensitivity' ? sampleSizeFinding(design, arm.estimated_max_micros) : null;
  if (small) findings.push(small);
  return {
    findings,
    proposal: { name: req.name, goal: req.goal ?? '', arms: [arm], run_count: design.run_count, estimated_max_micros: total, kind: design.kind, design },
  };
}

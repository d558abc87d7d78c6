/**
 * Schemas of studies that answer questions: what a caller asks for (a sensitivity or a
 * calibration of one lab), the design a plan approves (storage/studyDesign.ts) and the
 * analysis a finished study holds (activities/studies/finish.ts).
 */
import { arr, count, obj, str, uuid, sha256Hex, type JsonSchema } from '../schemas/common.ts';
import { MAX_SEED } from './prepare.ts';

const seed: JsonSchema = { type: 'integer', minimum: 0, maximum: MAX_SEED };
const num: JsonSchema = { type: 'number' };
const nullableNum: JsonSchema = { type: ['number', 'null'] };
const inputName = str(200, { minLength: 1, description: 'A number input the lab declares.' });
const outputName = str(200, { minLength: 1, description: 'An output the lab declares.' });
const summary: JsonSchema = {
  enum: ['value', 'final', 'max', 'mean', 'time_of_max'],
  description: 'How an output becomes one number: `value` for a number output; for a time series its `final` value, its `max`, the `mean` of its points, or the `time_of_max`.',
};

/** The lab a study varies: a workspace revision, its fixed inputs and its run settings. */
export const studyLabRequest: JsonSchema = obj({
  workspace_id: uuid, revision_id: uuid,
  inputs: { type: 'object', maxProperties: 256, description: 'Inputs every run receives; the varied parameters are set over them.' },
  compute_profile_id: str(64), max_runtime_seconds: { type: 'integer', minimum: 1 },
  seed: { ...seed, description: 'The seed every run of the study uses (chosen at plan time when absent).' },
}, ['workspace_id', 'revision_id']);

const parameterRequest = (distributions: boolean): JsonSchema => obj({
  input: inputName, low: num, high: num,
  ...(distributions ? {
    distribution: { enum: ['uniform', 'normal'], description: 'uniform over [low, high] (default), or a normal of `mean` and `sd` truncated to [low, high] (Sobol\' only).' },
    mean: num, sd: num,
  } : {}),
}, ['input', 'low', 'high']);

export const sensitivityRequest: JsonSchema = obj({
  parameters: arr(parameterRequest(true), { minItems: 1, maxItems: 20 }),
  outputs: arr(obj({ output: outputName, summary }, ['output']), { minItems: 1, maxItems: 20 }),
  method: { enum: ['sobol', 'morris'], description: '`sobol`: Saltelli sampling and Sobol\' first-order and total indices; `morris`: elementary effects (SALib).' },
  base_sample: { type: 'integer', minimum: 2, maximum: 4096, description: 'N: Sobol\' takes N(D + 2) runs (N a power of 2); Morris takes N trajectories of D + 1 runs.' },
  num_levels: { type: 'integer', minimum: 2, maximum: 32, description: 'Morris grid levels (even; default 4).' },
  seed: { ...seed, description: 'Seed of the sample and of the bootstrap behind the intervals (chosen at plan time when absent).' },
}, ['parameters', 'outputs', 'method', 'base_sample']);

export const calibrationRequest: JsonSchema = obj({
  parameters: arr(parameterRequest(false), { minItems: 1, maxItems: 20 }),
  dataset_id: str(64, { description: 'A registered dataset version holding the observation table (a `table` member, CSV with a `t` column).' }),
  sample_id: str(200, { description: 'Which table member, when the version has several.' }),
  observations: arr(obj({ output: outputName, column: str(200, { description: 'Its column in the table (default: the output\'s name).' }) }, ['output']), { minItems: 1, maxItems: 20 }),
  loss: { enum: ['sum_of_squares', 'gaussian_nll'], description: 'Sum of squared residuals, or the Gaussian negative log-likelihood (with `noise_sd`, or σ estimated with the parameters).' },
  noise_sd: { type: 'number', exclusiveMinimum: 0, description: 'σ of the Gaussian likelihood (gaussian_nll only); absent: estimated.' },
  optimizer: { enum: ['cmaes', 'tpe'], description: 'CMA-ES (the cmaes library, the engine of Optuna\'s CMA-ES sampler; one generation per batch) or Optuna\'s TPE sampler, by ask-and-tell.' },
  budget: { type: 'integer', minimum: 2, maximum: 10000, description: 'The most runs the study makes (and reserves).' },
  batch_size: { type: 'integer', minimum: 1, maximum: 100, description: 'Parameter sets asked for at once (a CMA-ES generation).' },
  seed: { ...seed, description: 'The optimizer\'s seed (chosen at plan time when absent).' },
  stop: obj({
    patience_batches: { type: 'integer', minimum: 1, maximum: 100 },
    relative_tolerance: { type: 'number', minimum: 0, maximum: 1 },
  }, ['patience_batches', 'relative_tolerance'], { description: 'Stop before the budget once the best loss improved by less than relative_tolerance over patience_batches batches.' }),
}, ['parameters', 'dataset_id', 'observations', 'loss', 'optimizer', 'budget', 'batch_size']);

const parameter: JsonSchema = obj({
  name: str(200), low: num, high: num, distribution: { enum: ['uniform', 'normal'] }, mean: num, sd: num,
}, ['name', 'low', 'high', 'distribution']);

const observedSeries: JsonSchema = obj({
  output: str(200), column: str(200), units: { type: ['string', 'null'] }, t: arr(num), y: arr(num),
}, ['output', 'column', 'units', 't', 'y']);

/** The approved design (storage/studyDesign.ts), null for a study of arms. */
export const studyDesign: JsonSchema = {
  oneOf: [
    { type: 'null' },
    obj({
      kind: { const: 'sensitivity' }, parameters: arr(parameter),
      outputs: arr(obj({ output: str(200), summary, value_type: str(40), units: { type: ['string', 'null'] } }, ['output', 'summary', 'value_type', 'units'])),
      method: { enum: ['sobol', 'morris'] }, base_sample: count, num_levels: count, num_resamples: count, seed, run_count: count,
    }, ['kind', 'parameters', 'outputs', 'method', 'base_sample', 'num_levels', 'num_resamples', 'seed', 'run_count']),
    obj({
      kind: { const: 'calibration' }, parameters: arr(parameter),
      dataset: obj({
        dataset_id: str(64), name: str(200), version: count, manifest_sha256: sha256Hex,
        member: obj({ file_id: uuid, sha256: sha256Hex, sample_id: str(200) }, ['file_id', 'sha256', 'sample_id']),
      }, ['dataset_id', 'name', 'version', 'manifest_sha256', 'member']),
      observations: arr(observedSeries), loss: { enum: ['sum_of_squares', 'gaussian_nll'] }, noise_sd: nullableNum,
      optimizer: { enum: ['cmaes', 'tpe'] }, budget: count, batch_size: count, seed,
      stop: { oneOf: [{ type: 'null' }, obj({ patience_batches: count, relative_tolerance: num }, ['patience_batches', 'relative_tolerance'])] },
      run_count: count,
    }, ['kind', 'parameters', 'dataset', 'observations', 'loss', 'noise_sd', 'optimizer', 'budget', 'batch_size', 'seed', 'stop', 'run_count']),
  ],
  description: 'What the study varies and how (sensitivity or calibration), as approved; null for a study of arms.',
};

const libraryVersions: JsonSchema = { type: 'object', additionalProperties: str(40), description: 'The analysis libraries that answered, by distribution name.' };

const sobolIndex: JsonSchema = obj({ parameter: str(200), S1: nullableNum, S1_conf: nullableNum, ST: nullableNum, ST_conf: nullableNum }, ['parameter', 'S1', 'S1_conf', 'ST', 'ST_conf']);
const morrisIndex: JsonSchema = obj({ parameter: str(200), mu: nullableNum, mu_star: nullableNum, sigma: nullableNum, mu_star_conf: nullableNum }, ['parameter', 'mu', 'mu_star', 'sigma', 'mu_star_conf']);

const sensitivityAnalysis: JsonSchema = obj({
  kind: { const: 'sensitivity' },
  method: { enum: ['sobol', 'morris'] },
  complete: { type: 'boolean', description: 'Every sampled run completed; indices exist only then.' },
  runs_completed: count,
  outputs: arr(obj({
    output: str(200, { description: 'The output and its summary, as `name` or `name.summary`.' }),
    units: { type: ['string', 'null'] },
    indices: arr({ oneOf: [sobolIndex, morrisIndex] }, { description: 'Per parameter: Sobol\' S1 and ST with their 95% confidence half-widths, or Morris\'s μ, μ*, σ and μ*\'s half-width.' }),
    ranking: arr(str(200), { description: 'Parameters by influence: total index (Sobol\') or μ* (Morris), largest first.' }),
  }, ['output', 'units', 'indices', 'ranking'])),
  library_versions: libraryVersions,
  descriptive: { const: true },
  note: str(2000),
}, ['kind', 'method', 'complete', 'runs_completed', 'outputs', 'library_versions', 'descriptive', 'note']);

const interval: JsonSchema = obj({
  estimate: { ...num, description: 'The value the interval is centred at: the linearised fit\'s least-squares point, one Gauss-Newton step from the best evaluated set (`best.parameters`, which no interval is centred at and may lie outside it).' },
  low: num, high: num,
  sd: { ...num, description: 'Standard error of the estimate under the linearisation.' },
}, ['estimate', 'low', 'high', 'sd'], { description: 'A simultaneous 95% interval around the estimate.' });

const calibrationAnalysis: JsonSchema = obj({
  kind: { const: 'calibration' },
  stopped: { enum: ['budget', 'converged', 'closed', 'no_runs'], description: 'Why no further batch was asked for.' },
  runs_told: count,
  best: {
    oneOf: [{ type: 'null' }, obj({ run_id: uuid, parameters: { type: 'object', additionalProperties: num }, loss: num }, ['run_id', 'parameters', 'loss'])],
    description: 'The evaluated set of least loss; null when no run completed.',
  },
  loss_curve: arr(obj({ run: count, batch: count, loss: nullableNum, best_loss: nullableNum }, ['run', 'batch', 'loss', 'best_loss']), { description: 'Each evaluated set in the order asked: its loss (null when its run failed) and the best so far.' }),
  fitted: arr(obj({ output: str(200), units: { type: ['string', 'null'] }, t: arr(num), observed: arr(num), fitted: arr(num) }, ['output', 'units', 't', 'observed', 'fitted']), { description: 'The best run\'s series at the observation times, beside the observations.' }),
  uncertainty: obj({
    method: { const: 'linearised_joint_region' }, level: { const: 0.95 },
    intervals: { oneOf: [{ type: 'null' }, { type: 'object', additionalProperties: interval }] },
    residual_sd: num, descriptive: { const: true }, note: str(2000),
  }, ['method', 'level', 'intervals', 'descriptive', 'note']),
  library_versions: libraryVersions,
  descriptive: { const: true },
  note: str(2000),
}, ['kind', 'stopped', 'runs_told', 'best', 'loss_curve', 'fitted', 'uncertainty', 'library_versions', 'descriptive', 'note']);

/** What a finished sensitivity or calibration study found; null until then, and for a study of arms. */
export const studyAnalysis: JsonSchema = {
  oneOf: [{ type: 'null' }, sensitivityAnalysis, calibrationAnalysis],
  description: 'What the study found, stored when it ends (null before, and for a study of arms). Descriptive: no statement of scientific validity.',
};

/**
 * Schemas of studies that answer questions: what a caller asks for (a sensitivity or a
 * calibration of one lab), the design a plan approves (storage/studyDesign.ts) and the
 * analysis a finished study holds (activities/studies/finish.ts).
 */
import { arr, count, obj, str, uuid, sha256Hex, type JsonSchema } from '../schemas/common.ts';
import { MAX_SEED } from './prepare.ts';
import { MAX_STUDY_RUNS, MAX_TIME_POINTS } from '../../storage/studyDesign.ts';
import { SENSITIVITY_METHOD_NAMES, SENSITIVITY_METHODS, methodFields } from '../../kernel/sensitivityMethods.ts';

const seed: JsonSchema = { type: 'integer', minimum: 0, maximum: MAX_SEED };
const num: JsonSchema = { type: 'number' };
const nullableNum: JsonSchema = { type: ['number', 'null'] };
const inputName = str(200, { minLength: 1, description: 'A number input the lab declares.' });
const outputName = str(200, { minLength: 1, description: 'An output the lab declares.' });
const summary: JsonSchema = {
  enum: ['value', 'final', 'max', 'mean', 'time_of_max', 'series'],
  description: 'How an output is analysed: `value` for a number output; for a time series its `final` value, `max`, `mean` or `time_of_max`, or `series`: indices at each time (or at `times`).',
};
const times = arr(num, { minItems: 1, maxItems: MAX_TIME_POINTS });
const methodsInWords = SENSITIVITY_METHOD_NAMES.map((m) => {
  const spec = SENSITIVITY_METHODS[m];
  return `${m} ${spec.runsInWords}${spec.minBase > 2 ? ` (N≥${spec.minBase})` : ''}`;
}).join('; ');

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
  outputs: arr(obj({ output: outputName, summary, times }, ['output']), { minItems: 1, maxItems: 20 }),
  method: { enum: SENSITIVITY_METHOD_NAMES },
  base_sample: { type: 'integer', minimum: 2, maximum: MAX_STUDY_RUNS, description: `N. Runs by SALib's method: ${methodsInWords}; Sobol' N a power of 2.` },
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
  budget: { type: 'integer', minimum: 2, maximum: 100000, description: 'The most runs the study makes (and reserves).' },
  batch_size: { type: 'integer', minimum: 1, maximum: 100, description: 'Parameter sets asked for at once (a CMA-ES generation).' },
  seed: { ...seed, description: 'The optimizer\'s seed (chosen at plan time when absent).' },
  stop: obj({
    patience_batches: { type: 'integer', minimum: 1, maximum: 100 },
    relative_tolerance: { type: 'number', minimum: 0, maximum: 1 },
  }, ['patience_batches', 'relative_tolerance'], { description: 'Stop before the budget once the best loss improved by less than relative_tolerance over patience_batches batches.' }),
}, ['parameters', 'dataset_id', 'observations', 'loss', 'optimizer', 'budget', 'batch_size']);

const step: JsonSchema = { type: 'number', exclusiveMinimum: 0 };
const profileOptions: JsonSchema = obj({
  default_step_size_absolute: step, min_step_size_absolute: step, max_step_size_absolute: step,
}, [], { description: 'pyPESTO ProfileOptions steps.' });

export const petabCalibrationRequest: JsonSchema = obj({
  import_id: str(64, { description: 'The PEtab import to calibrate.' }),
  optimizer: { enum: ['fides', 'lbfgsb'], description: 'Local optimiser (default fides).' },
  starts: { type: 'integer', minimum: 1, maximum: 1000, description: 'Local starts, uniform within the scaled bounds.' },
  max_evaluations: { type: 'integer', minimum: 10, maximum: 100000, description: 'Evaluations per start (default 10,000).' },
  seed: { ...seed, description: 'Of the starts.' },
  profile: obj({
    parameters: arr(str(200), { maxItems: 200, description: 'Default: every estimated one.' }),
    options: profileOptions,
  }, [], { description: 'Profiles from the best point.' }),
  compute_profile_id: str(64), max_runtime_seconds: { type: 'integer', minimum: 1, description: 'Default 900 s.' },
}, ['import_id', 'starts']);

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
      outputs: arr(obj({
        output: str(200), summary, value_type: str(40), units: { type: ['string', 'null'] },
        times: { oneOf: [{ type: 'null' }, arr(num)], description: '`series` only: the times indices are stated at; null for the series\' own times.' },
      }, ['output', 'summary', 'value_type', 'units'])),
      method: { enum: SENSITIVITY_METHOD_NAMES }, base_sample: count, num_levels: count, num_resamples: count, seed, run_count: count,
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
    obj({
      kind: { const: 'petab_calibration' }, import_id: str(64), yaml: str(1000),
      files: arr(obj({ path: str(1000), sha256: sha256Hex }, ['path', 'sha256'])),
      parameters: arr(obj({ id: str(200), scale: str(10), lb: num, ub: num, nominal: num }, ['id', 'scale', 'lb', 'ub', 'nominal']), { description: 'The estimated parameters in vector order, bounds and nominal values on their scales.' }),
      optimizer: { enum: ['fides', 'lbfgsb'] }, starts: count, starts_per_run: count, max_evaluations: count, seed,
      profile: obj({ parameters: arr(str(200)), options: { type: 'object', additionalProperties: num } }, ['parameters', 'options']),
      profile_runs: count, run_count: count,
    }, ['kind', 'import_id', 'yaml', 'files', 'parameters', 'optimizer', 'starts', 'starts_per_run', 'max_evaluations', 'seed', 'profile', 'profile_runs', 'run_count']),
  ],
  description: 'What the study varies and how (sensitivity, calibration or PEtab calibration), as approved; null for a study of arms.',
};

const libraryVersions: JsonSchema = { type: 'object', additionalProperties: str(40), description: 'The analysis libraries that answered, by distribution name.' };

/** One parameter's indices as a method states them: each a number (or, over time, a number at each time), null where undefined. */
const methodIndices = (value: JsonSchema): JsonSchema[] => SENSITIVITY_METHOD_NAMES.map((m) => {
  const fields = methodFields(m);
  return obj({ parameter: str(200), ...Object.fromEntries(fields.map((f) => [f, value])) }, ['parameter', ...fields], { description: SENSITIVITY_METHODS[m].title });
});
const ranks = SENSITIVITY_METHOD_NAMES.map((m) => `${SENSITIVITY_METHODS[m].rank} (${m})`).join(', ');

const overTime: JsonSchema = obj({
  times: arr(num, { description: 'The times indices are stated at.' }),
  indices: arr({ anyOf: methodIndices(arr(nullableNum)) }, { description: 'Per parameter, each field of the method at each time (null where undefined).' }),
  undefined: arr(obj({
    time: num, reason: { enum: ['constant', 'missing', 'failed'] }, message: str(500),
  }, ['time', 'reason', 'message']), { description: 'The times no index is stated at, and why: the output is the same in every run there (`constant`), some runs\' series have no value there (`missing`), or SALib failed at that time alone (`failed`).' }),
  leaders: arr(obj({ parameter: str(200), from: num, to: num }, ['parameter', 'from', 'to']), {
    description: 'Who dominates when: the parameter whose `rank` index is largest over each stretch of times, in time order; control changes hands where one stretch ends.',
  }),
  rank: str(40, { description: `The index \`leaders\` and \`ranking\` go by: ${ranks}.` }),
}, ['times', 'indices', 'undefined', 'leaders', 'rank'], { description: 'A `series` output\'s indices at each time (SALib\'s, computed per time from the same runs).' });

const sensitivityAnalysis: JsonSchema = obj({
  kind: { const: 'sensitivity' },
  method: { enum: SENSITIVITY_METHOD_NAMES },
  fields: arr(str(40), { description: 'The fields each parameter\'s indices carry, in the method\'s order (absent from analyses stored before it was listed).' }),
  complete: { type: 'boolean', description: 'Every sampled run completed; indices exist only then.' },
  runs_completed: count,
  outputs: arr(obj({
    output: str(200, { description: 'The output and its summary, as `name` or `name.summary`.' }),
    units: { type: ['string', 'null'] },
    indices: arr({ anyOf: methodIndices(nullableNum) }, { description: 'Per parameter, the method\'s indices with their 95% confidence half-widths (`*_conf`) where it states them; empty for a `series` output (see `over_time`).' }),
    ranking: arr(str(200), { description: `Parameters by influence, largest first, by ${ranks}; for a \`series\` output by that index's mean over the times it is stated at.` }),
    over_time: overTime,
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

const bound: JsonSchema = { type: ['number', 'null'] };
const petabAnalysis: JsonSchema = obj({
  kind: { const: 'petab_calibration' },
  stopped: { enum: ['completed', 'closed', 'no_runs'] },
  import_id: str(64), starts_told: count, starts_asked: count,
  best: {
    oneOf: [{ type: 'null' }, obj({ nll: num, start: count, run_id: uuid, parameters: { type: 'object', additionalProperties: num } }, ['nll', 'start', 'run_id', 'parameters'])],
    description: 'The best end point of every start: its NLL and parameters on their scales.',
  },
  waterfall: arr(obj({
    rank: count, start: count, nll: num, evaluations: count, ended: str(40), run_id: uuid, evaluations_sha256: { type: ['string', 'null'] },
  }, ['rank', 'start', 'nll', 'evaluations', 'ended', 'run_id', 'evaluations_sha256']), { description: 'Every start\'s end point, best first: its NLL, how many evaluations it made and how it ended, and the digest of its evaluations file (absent with include_points false).' }),
  within_best: obj({ threshold: num, starts: count, fraction: num }, ['threshold', 'starts', 'fraction'], { description: 'The starts that ended within `threshold` of the best NLL.' }),
  parameters: arr(obj({
    id: str(200), scale: str(10), lb: num, ub: num, nominal: num, best: nullableNum,
    profile: { oneOf: [{ type: 'null' }, obj({ low: bound, high: bound, identifiability: { enum: ['identifiable', 'one_sided', 'flat'] } }, ['low', 'high', 'identifiability'])] },
    gauss_newton: {
      oneOf: [{ type: 'null' }, obj({ status: { enum: ['interval', 'flat', 'at_bound'] }, bound: { enum: ['lower', 'upper', null] }, low: bound, high: bound, se: bound }, ['status', 'bound', 'low', 'high', 'se'])],
      description: 'The Gauss-Newton (asymptotic) view at the best point: an interval, or none where the curvature is flat or the parameter sits at a bound.',
    },
    agreement: { enum: ['agree', 'disagree', null] },
  }, ['id', 'scale', 'lb', 'ub', 'nominal', 'best', 'profile', 'gauss_newton', 'agreement']), { description: 'Each estimated parameter on its scale: its best value, its profile\'s 95% interval and flag, and the Gauss-Newton interval beside it.' }),
  profiles: arr(obj({
    parameter: str(200), threshold: num, low: bound, high: bound, identifiability: { enum: ['identifiable', 'one_sided', 'flat'] },
    points: arr(arr(nullableNum), { description: 'The profile\'s path: [value on the scale, NLL] (absent with include_points false).' }),
  }, ['parameter', 'threshold', 'low', 'high', 'identifiability'])),
  fits: arr(obj({
    observable: str(200), transformation: { enum: ['lin', 'log', 'log10'] }, noise_distribution: { enum: ['normal', 'laplace'] },
    points: arr(obj({
      condition: str(200), preequilibration: { type: ['string', 'null'] }, time: num, measurement: nullableNum, simulation: nullableNum, sigma: nullableNum, low: nullableNum, high: nullableNum,
    }, ['condition', 'preequilibration', 'time', 'measurement', 'simulation', 'sigma', 'low', 'high']), { description: 'Absent with include_points false.' }),
  }, ['observable', 'transformation', 'noise_distribution']), {
    description: 'Each observable\'s measurements beside its simulation at the best point, with the noise scale the likelihood gives each (sigma, on the observable\'s transformation) and the band of one noise scale about the simulation (low, high).',
  }),
  gauss_newton: { oneOf: [{ type: 'null' }, obj({ method: { const: 'gauss_newton' }, level: { const: 0.95 }, positive_definite: { type: 'boolean' }, eigenvalues: arr(num), flat: arr(str(200)) }, ['method', 'level', 'positive_definite', 'eigenvalues', 'flat'])] },
  disagreements: arr(str(2000), { description: 'Where the profile and the Gauss-Newton view of a parameter disagree, in words.' }),
  warnings: arr(str(2000), { description: 'What says the best start may not be the optimum (a waterfall without a plateau, a profile below the best), in words.' }),
  library_versions: libraryVersions,
  descriptive: { const: true },
  note: str(2000),
}, ['kind', 'stopped', 'import_id', 'starts_told', 'starts_asked', 'best', 'within_best', 'parameters', 'profiles', 'fits', 'gauss_newton', 'disagreements', 'warnings', 'library_versions', 'descriptive', 'note']);

/** What a finished study found; null until then, and for a study of arms. */
export const studyAnalysis: JsonSchema = {
  oneOf: [{ type: 'null' }, sensitivityAnalysis, calibrationAnalysis, petabAnalysis],
  description: 'What the study found, stored when it ends (null before, and for a study of arms). Descriptive: no statement of scientific validity.',
};

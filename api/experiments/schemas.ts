/**
 * Output schemas of the study (experiment) operations: the plan (experiment_prepare), the
 * summary lists show (experimentSummary) and the full study with its runs and comparison
 * (experimentView, storage/experimentComparison.ts). Strict: a field the views add must be
 * declared here, so the published reference and the SDK types stay true to the answers.
 */
import {
  anyObject, arr, count, cursorPage, finding, nullableTime, nullableUsd, obj, planRecord, sha256Hex, str, time, usd, uuid, type JsonSchema,
} from '../schemas/common.ts';
import { RUN_STATUSES, runError } from '../runs/schemas.ts';
import { fileUrlSchema } from '../artifactUrls.ts';
import { MAX_SEED } from './prepare.ts';
import { studyAnalysis, studyDesign } from './studySchemas.ts';

/** A study's states (storage/db/experiments.ts ExperimentStatus). */
export const EXPERIMENT_STATUSES = ['running', 'completed', 'closed'] as const;

const seed: JsonSchema = { type: 'integer', minimum: 0, maximum: MAX_SEED };
const label: JsonSchema = str(100, { minLength: 1 });

/** An arm as approved (armView): what each of its runs executes, and its per-run price. */
const armFields: Record<string, JsonSchema> = {
  label: { ...label, description: 'Unique within the study; names the arm in the comparison.' },
  workspace_id: uuid,
  revision_id: uuid,
  resolved_ref: { ...str(300), description: 'The exact `<namespace>/<name>@<version>` every run of the arm executes.' },
  package_sha256: str(80),
  inputs: { ...anyObject, description: 'The inputs every run of the arm receives.' },
  compute_profile: str(64),
  max_runtime_seconds: count,
  replicates: { type: 'integer', minimum: 1, maximum: 10, description: 'Runs of this arm.' },
  seed: { ...seed, description: 'Replicate k runs with seed + k, or with seed itself when `fixed_seed`.' },
  fixed_seed: { type: 'boolean', description: 'Every replicate runs with `seed` itself (to check reproducibility).' },
  seeds: arr(seed, { description: 'The seed of each replicate, in order.' }),
  estimated_max_usd_per_run: { ...usd, description: 'The most one run of the arm can cost: its reservation.' },
};

/** One run of a study (runEntry). */
const runEntryFields: Record<string, JsonSchema> = {
  run_id: uuid,
  replicate: { type: 'integer', minimum: 0, description: '0-based replicate of its arm.' },
  seed,
  status: { enum: [...RUN_STATUSES] },
  error: { oneOf: [{ type: 'null' }, runError] },
  credits_reserved: { ...usd, description: 'US dollars reserved for the run at acceptance.' },
  credits_settled: { ...nullableUsd, description: 'US dollars charged; null until the run is terminal.' },
};
export const experimentRun: JsonSchema = obj(runEntryFields, Object.keys(runEntryFields));

/** A run that no longer counts in the study (it keeps its own record and charge). */
export const detachedExperimentRun: JsonSchema = obj(
  { ...runEntryFields, arm: { ...label, description: 'Label of the arm it ran for.' }, detached_at: time },
  [...Object.keys(runEntryFields), 'arm', 'detached_at'],
);

/** Runs per status, every status named (zero included), plus their total; detached runs excluded. */
export const runTotals: JsonSchema = obj(
  { ...Object.fromEntries(RUN_STATUSES.map((s) => [s, count])), total: count },
  [...RUN_STATUSES, 'total'],
  { description: 'Runs of the study per status (every status named, zero included) and their total; detached runs are not counted.' },
);

/** A stored file of the study (CSV, chart, analysis, or a PEtab calibration's exported problem), one of the account's files. */
export const experimentArtifact: JsonSchema = obj({
  file_id: uuid,
  file_name: str(255),
  content_type: str(200),
  format: { enum: ['csv', 'svg', 'json', 'zip'] },
  size_bytes: count,
  sha256: { ...sha256Hex, description: 'Lowercase hex SHA-256 of the bytes: verify a download against it.' },
  download_url: fileUrlSchema,
}, ['file_id', 'file_name', 'content_type', 'format', 'size_bytes', 'sha256', 'download_url']);

/** One arm's summary of one numeric scalar output; spread and interval need two runs. */
export const outputMetrics: JsonSchema = obj({
  n: { type: 'integer', minimum: 1, description: 'Completed runs of the arm that gave this output.' },
  mean: { type: 'number' },
  stddev: { type: ['number', 'null'], minimum: 0, description: 'Sample standard deviation; null with one run.' },
  min: { type: 'number' },
  max: { type: 'number' },
  ci95: {
    type: ['array', 'null'], items: { type: 'number' }, minItems: 2, maxItems: 2,
    description: 'The 95% confidence interval of the mean (Student t), [low, high]; null with one run.',
  },
}, ['n', 'mean', 'stddev', 'min', 'max', 'ci95']);

/** A descriptive Welch t-test of arm 0 against arm 1 for one output. */
export const welchTest: JsonSchema = obj({
  output: str(200),
  method: { const: 'welch_t_test' },
  statistic: { type: ['number', 'null'] },
  df: { type: ['number', 'null'], minimum: 0 },
  p_value: { type: ['number', 'null'], minimum: 0, maximum: 1, description: 'Descriptive and uncorrected for the number of outputs compared.' },
  descriptive: { const: true },
  note: { ...str(500), description: 'Why there is no p-value, when there is none.' },
}, ['output', 'method', 'statistic', 'df', 'p_value', 'descriptive']);

/** The comparison across arms (compareArms): completed attached runs only, descriptive. */
export const comparison: JsonSchema = {
  ...obj({
    descriptive: { const: true },
    note: { ...str(1000), description: 'What these numbers are and are not.' },
    confidence_level: { const: 0.95 },
    outputs: arr(str(200), { description: 'The numeric scalar outputs compared (declared numbers any completed run gave), sorted by name.' }),
    arms: arr(obj({
      label,
      completed_runs: count,
      metrics: {
        description: 'Per output name; null when the arm has no completed run.',
        // A map keyed by output name: every value is one strict metrics object.
        oneOf: [{ type: 'null' }, { type: 'object', additionalProperties: outputMetrics }],
      },
    }, ['label', 'completed_runs', 'metrics']), { description: 'One entry per arm, in the study\'s order.' }),
    tests: arr(welchTest, { description: 'Only for a study of exactly two arms: arm 0 against arm 1, per output; empty otherwise.' }),
  }, ['descriptive', 'note', 'confidence_level', 'outputs', 'arms', 'tests']),
  description: 'Descriptive statistics over completed, attached runs only: no correction for multiple outputs and no statement of validity.',
};

const studyKind: JsonSchema = { enum: ['arms', 'sensitivity', 'calibration', 'petab_calibration'], description: '`arms`: arms compared; `sensitivity`: which parameters matter; `calibration`: which values explain a dataset; `petab_calibration`: an imported PEtab problem calibrated by multi-start local optimisation, with profiles.' };

/** A study as lists show it: arms, run totals and money, without per-run detail. */
const summaryFields: Record<string, JsonSchema> = {
  object: { const: 'experiment' },
  kind: studyKind,
  id: { ...str(64), description: 'identifier (exp_...)' },
  experiment_id: { ...str(64), description: 'The same identifier as `id`.' },
  name: str(200),
  goal: { ...str(2000), description: 'Empty when none was given.' },
  status: { enum: [...EXPERIMENT_STATUSES], description: '`running` until every run has ended, then `completed`; `closed` by the user (no new runs).' },
  plan_id: { type: ['string', 'null'], format: 'uuid', description: 'The approved plan the study was opened from.' },
  arm_labels: arr(label),
  workspace_ids: arr(uuid),
  run_totals: runTotals,
  credits_reserved: { ...usd, description: 'US dollars reserved for the whole study when it opened.' },
  artifacts: arr(experimentArtifact, { description: 'The comparison CSV and chart, stored once every run has ended.' }),
  created_at: time,
  updated_at: { ...time, description: 'Changes whenever one of its runs changes state.' },
  completed_at: { ...nullableTime, description: 'Set once every run has ended (the status may be `closed` then).' },
  closed_at: nullableTime,
};
export const experimentSummary: JsonSchema = obj(summaryFields, Object.keys(summaryFields));

/** A study in full (GET/PATCH /experiments/{id}, POST /experiments). */
const fullFields: Record<string, JsonSchema> = {
  ...summaryFields,
  credits_settled: { ...usd, description: 'US dollars charged so far for its ended runs (detached ones included).' },
  arms: arr(obj({ ...armFields, runs: arr(experimentRun, { description: 'Its attached runs, in start order (only with include_runs).' }) }, Object.keys(armFields))),
  detached_runs: arr(detachedExperimentRun, { description: 'Runs detached from the study (only with include_runs).' }),
  comparison,
  design: studyDesign,
  analysis: studyAnalysis,
};
export const experimentRecord: JsonSchema = obj(fullFields, Object.keys(fullFields).filter((k) => k !== 'detached_runs'));

/**
 * Whether a study's answer lists its runs: a 1,000-run study's runs are most of its
 * answer, and GET /experiments/{id}/runs pages them with more about each.
 */
export const includeRuns: JsonSchema = { type: 'boolean', description: 'List each arm\'s runs and the detached runs (default false; up to 1000 runs; experiment_run_list pages any).' };
export const includePoints: JsonSchema = { type: 'boolean', description: 'PEtab analysis points (default true; MCP false).' };

export const experimentPage: JsonSchema = cursorPage(experimentSummary);

/** One of a study's runs as GET /experiments/{id}/runs lists it (storage/studyRunEntries.ts). */
const studyRunFields: Record<string, JsonSchema> = {
  run_id: uuid,
  position: { type: 'integer', minimum: 1, description: 'Its place (from 1) in the order the study starts its runs.' },
  status: { enum: [...RUN_STATUSES] },
  seed,
  arm: { ...str(100), description: 'Label of the arm it runs for (a question study has one).' },
  replicate: { type: 'integer', minimum: 0, description: '0-based replicate of its arm.' },
  batch: { type: ['integer', 'null'], minimum: 0, description: 'The batch that gave it its parameter set; null until given one, and for a comparison\'s runs.' },
  params: {
    oneOf: [{ type: 'null' }, { type: 'object', additionalProperties: { type: 'number' } }],
    description: 'The parameter set it was given, by input name; null until given one, and for a comparison\'s runs.',
  },
  outputs: {
    oneOf: [{ type: 'null' }, { type: 'object', additionalProperties: { type: ['number', 'null'] } }],
    description: 'Sensitivity: each studied output\'s number, by its key (`recovered` or `recovered.final`), null for a run that gave none; the whole map null until the run told the study.',
  },
  loss: { type: ['number', 'null'], description: 'Calibration: the loss of its parameter set; null until told, for a run that did not complete, and for other kinds.' },
};
export const studyRun: JsonSchema = obj(studyRunFields, Object.keys(studyRunFields));
export const studyRunPage: JsonSchema = cursorPage(studyRun);

/** POST /experiment-plans: the whole proposal, priced and digested, to approve before POST /experiments. */
export const experimentPlan: JsonSchema = planRecord('experiment_plan', {
  name: str(200),
  goal: { ...str(2000), description: 'Empty when none was given.' },
  kind: studyKind,
  design: studyDesign,
  arms: arr(obj({ ...armFields, findings: arr(finding, { description: 'The plan\'s findings about this arm.' }) }, [...Object.keys(armFields), 'findings'])),
  run_count: { ...count, description: 'Arms x replicates.' },
  estimated_max_usd: { ...usd, description: 'The whole study\'s maximum (the sum of every run\'s), reserved when it opens.' },
});

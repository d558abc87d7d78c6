/**
 * Named types of the records the API answers, every one taken from the generated contract
 * (`generated/openapi.ts`, from each operation's declared output schema): a field the
 * server adds or drops changes these types with it. Nothing here is written by hand but
 * the names and the few helpers below.
 */
import type { Envelope, QueryParams, RequestBody, ResponseBody, OperationId } from './types.ts';

/** An operation's own answer, without the envelope's fields. */
export type Answer<K extends OperationId> = Omit<ResponseBody<K>, keyof Envelope>;

/** A run's state: queued, running, cancelling, completed, failed, cancelled, timed_out. */
export type RunStatus = NonNullable<QueryParams<'run_list'>['status']>;

/** States a run never leaves. */
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'timed_out'];

export function isTerminalStatus(status: string): status is RunStatus {
  return (TERMINAL_RUN_STATUSES as readonly string[]).includes(status);
}

/** A run record (GET /runs/{run_id}, POST /runs, list items). */
export type Run = Answer<'run_get'>;
/** GET /runs/{run_id}/results. */
export type RunResults = Answer<'run_results'>;
/** One stored artifact of a run, as results show it. */
export type RunArtifact = RunResults['artifacts'][number];
/** GET /runs/{run_id}/artifacts/{artifact_id}: the artifact with whether it is public and when it was stored. */
export type RunArtifactMetadata = Answer<'run_artifact_get'>;
/** One page of a run's events. */
export type RunEventPage = Answer<'run_events'>;
/** One entry of a run's log (GET /runs/{run_id}/events). */
export type RunEvent = RunEventPage['items'][number];
/** Known event types; others may be added by the server. */
export type RunEventType = 'state_changed' | 'log' | 'progress' | 'artifact_stored' | 'charge_settled' | 'warning';
/** POST /run-plans: a priced, digested proposal to approve before POST /runs. */
export type RunPlan = Answer<'run_prepare'>;
/** A finding of a plan (prepare routes). */
export type Finding = RunPlan['findings'][number];

/** An uploaded (or imported) input file. */
export type FileRecord = Answer<'file_upload'>;

/** A study's state: `running` until every run has ended, then `completed`; `closed` by the user. */
export type ExperimentStatus = Experiment['status'];
/** POST /experiment-plans (the proposal). */
export type ExperimentPlanParams = RequestBody<'experiment_prepare'>;
/** One arm of a study as proposed. */
export type ExperimentArmParams = NonNullable<ExperimentPlanParams['arms']>[number];
/** The lab a sensitivity or calibration study varies. */
export type StudyLabParams = NonNullable<ExperimentPlanParams['lab']>;
/** A sensitivity study: parameters with ranges, outputs, Sobol' or Morris, a base sample. */
export type SensitivityParams = NonNullable<ExperimentPlanParams['sensitivity']>;
/** A calibration: parameters with bounds, a dataset version's observations, a loss, an optimizer, a budget. */
export type CalibrationParams = NonNullable<ExperimentPlanParams['calibration']>;
/** PATCH /experiments/{id}: any of these (at least one). Deletes nothing. */
export type ExperimentUpdateParams = RequestBody<'experiment_update'>;
/** POST /experiment-plans: the whole proposal, priced and digested, to approve before POST /experiments. */
export type ExperimentPlan = Answer<'experiment_prepare'>;
/** A study as lists show it (GET /experiments items). */
export type ExperimentSummary = Answer<'experiment_list'>['items'][number];
/** One of a study's runs as GET /experiments/{id}/runs lists it: its parameter set and what it told the study. */
export type StudyRun = Answer<'experiment_run_list'>['items'][number];
/** A study in full (GET/PATCH /experiments/{id}, POST /experiments). */
export type Experiment = Answer<'experiment_get'>;
/** An arm as approved, with its runs. */
export type ExperimentArm = Experiment['arms'][number];
/** One run of a study. */
export type ExperimentRun = NonNullable<ExperimentArm['runs']>[number];
/** A study's runs per status (every status named, zero included) and their total. */
export type RunTotals = Experiment['run_totals'];
/** The comparison across arms, from completed attached runs only (descriptive). */
export type Comparison = Experiment['comparison'];
/** What a sensitivity, calibration or PEtab calibration study found (null until it ends, and for a study of arms). */
export type StudyAnalysis = Experiment['analysis'];
/** A sensitivity study's indices, per output. */
export type SensitivityAnalysis = Extract<NonNullable<StudyAnalysis>, { kind: 'sensitivity' }>;
/** A calibration's best parameters, loss curve, fit and intervals. */
export type CalibrationAnalysis = Extract<NonNullable<StudyAnalysis>, { kind: 'calibration' }>;
/** A PEtab calibration's waterfall, best parameters, fits, profiles and Gauss-Newton view. */
export type PetabCalibrationAnalysis = Extract<NonNullable<StudyAnalysis>, { kind: 'petab_calibration' }>;
/** One arm's summary of one numeric scalar output. */
export type OutputMetrics = NonNullable<Comparison['arms'][number]['metrics']>[string];
/** A descriptive Welch t-test of arm 0 against arm 1. */
export type WelchTest = Comparison['tests'][number];
/** A stored file of the study (comparison CSV, chart). */
export type ExperimentArtifact = Experiment['artifacts'][number];

/** The key a sensitivity study's output has in a run's `outputs` (and in `sort=outputs.<key>`): `recovered`, or `recovered.final` when summarised. */
export function studyOutputKey(o: { output: string; summary: string }): string {
  return o.summary === 'value' ? o.output : `${o.output}.${o.summary}`;
}

/** Every run of the study has ended (the study is completed, or closed and drained). */
export function isStudyFinished(e: Pick<ExperimentSummary, 'completed_at'>): boolean {
  return e.completed_at !== null && e.completed_at !== undefined;
}

/** The list shape of cursor-paginated routes. */
export interface CursorPageBody<T> {
  items: T[];
  has_more: boolean;
  next_cursor: string | null;
}

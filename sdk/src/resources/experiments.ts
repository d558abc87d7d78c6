/**
 * Experiments: studies of several arms, prepared as one digest and price, opened
 * together, followed through a StudyHandle and compared across arms.
 */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import { StudyNotStarted } from '../errors.ts';
import type {
  Experiment, ExperimentPlan, ExperimentPlanParams, ExperimentStatus, ExperimentSummary, ExperimentUpdateParams, StudyRun,
} from '../models.ts';
import type { CursorPageBody } from '../models.ts';
import { StudyHandle, type StudyWaitOptions } from '../studyHandle.ts';
import type { QueryParams, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

/** GET /experiments filters. */
export interface ExperimentListParams {
  status?: ExperimentStatus | null;
  workspace_id?: string | null;
  limit?: number;
  cursor?: string | null;
}

/** GET /experiments/{experiment_id}/runs: `status` filter, `sort` (`position`, `params.<name>`, `outputs.<key>`, `loss`), `order`, paging. */
export type StudyRunListParams = QueryParams<'experiment_run_list'>;

/** `experiments.run()` options. */
export interface ExperimentRunOptions {
  /**
   * Shown the prepared plan (findings, run count, whole-study price, digest) before
   * anything is reserved; the study opens only if it returns true. Without it, a ready
   * plan opens at once.
   */
  confirm?: (plan: WithEnvelope<ExperimentPlan>) => boolean | Promise<boolean>;
  /** Your own key for opening the study (a retry of yours must send the same one). */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

export class Experiments extends Resource {
  /** GET /experiments: most recently changed first, with run totals. Await for one page; `for await` for every study. */
  list(params: ExperimentListParams = {}, opts?: RequestOptions): PageRequest<ExperimentSummary, WithEnvelope<CursorPageBody<ExperimentSummary>>> {
    return this.cursorList<ExperimentSummary>('/experiments', params, opts);
  }

  /** POST /experiment-plans: preflight every arm as a lone run, price and digest the whole study; nothing is queued. */
  prepare(body: ExperimentPlanParams, opts?: RequestOptions): Promise<WithEnvelope<ExperimentPlan>> {
    return this.postJson('/experiment-plans', body, opts);
  }

  /** POST /experiments: reserve the approved study whole (402 and no run when short) and queue its runs. */
  create(plan: { plan_id: string; plan_sha256: string }, opts?: RequestOptions): Promise<WithEnvelope<Experiment>> {
    return this.postJson('/experiments', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, opts);
  }

  /**
   * Prepares the study, lets `confirm` see its plan and price, then opens exactly that
   * plan; returns its handle without waiting. Throws StudyNotStarted (with the plan)
   * when the plan is blocked or `confirm` declines it: then nothing is reserved.
   */
  async run(body: ExperimentPlanParams, options: ExperimentRunOptions = {}): Promise<StudyHandle> {
    const plan = await this.prepare(body, { signal: options.signal });
    if (plan.status !== 'ready') throw new StudyNotStarted(plan, 'blocked');
    if (options.confirm && !(await options.confirm(plan))) throw new StudyNotStarted(plan, 'declined');
    const study = await this.create(plan, { idempotencyKey: options.idempotencyKey, signal: options.signal });
    return new StudyHandle(this, study.id, study);
  }

  /** A handle on an existing study (no request is made). */
  handle(experimentId: string): StudyHandle {
    return new StudyHandle(this, experimentId);
  }

  /** Waits until every run of a study has ended (see StudyHandle.wait). */
  wait(experimentId: string, options?: StudyWaitOptions): Promise<WithEnvelope<Experiment>> {
    return this.handle(experimentId).wait(options);
  }

  /** GET /experiments/{experiment_id}: arms, run totals and the comparison (its runs: `runs`). */
  get(experimentId: string, opts?: RequestOptions): Promise<WithEnvelope<Experiment>> {
    return this.getJson(path`/experiments/${experimentId}`, undefined, opts);
  }

  /**
   * GET /experiments/{experiment_id}/runs: the study's runs with the parameter set each was
   * given and what it told (its outputs, or its loss), sorted as asked. Await for one page;
   * `for await` for every run.
   */
  runs(experimentId: string, params: StudyRunListParams = {}, opts?: RequestOptions): PageRequest<StudyRun, WithEnvelope<CursorPageBody<StudyRun>>> {
    return this.cursorList<StudyRun>(path`/experiments/${experimentId}/runs`, params, opts);
  }

  /** PATCH /experiments/{experiment_id}: rename, re-goal, close, detach runs; deletes nothing. */
  update(experimentId: string, body: ExperimentUpdateParams, opts?: RequestOptions): Promise<WithEnvelope<Experiment>> {
    return this.patchJson(path`/experiments/${experimentId}`, body, opts);
  }
}

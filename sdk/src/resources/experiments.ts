/** Experiments: studies of several arms, prepared as one digest and queued together. */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { CursorPageBody } from '../models.ts';
import type { ListItem, QueryParams, RequestBody, ResponseBody, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

export type Experiment = ListItem<'experiment_list'>;

export class Experiments extends Resource {
  /** GET /experiments. */
  list(params: QueryParams<'experiment_list'> = {}, opts?: RequestOptions): PageRequest<Experiment, WithEnvelope<CursorPageBody<Experiment>>> {
    return this.cursorList<Experiment>('/experiments', params, opts);
  }

  /** POST /experiment-plans: preflight every arm; nothing is queued. */
  prepare(body: RequestBody<'experiment_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'experiment_prepare'>> {
    return this.postJson('/experiment-plans', body, opts);
  }

  /** POST /experiments: open the approved study and queue its arms. */
  create(plan: RequestBody<'experiment_create'>, opts?: RequestOptions): Promise<ResponseBody<'experiment_create'>> {
    return this.postJson('/experiments', plan, opts);
  }

  /** GET /experiments/{experiment_id}: arms, runs and the comparison. */
  get(experimentId: string, opts?: RequestOptions): Promise<ResponseBody<'experiment_get'>> {
    return this.getJson(path`/experiments/${experimentId}`, undefined, opts);
  }

  /** PATCH /experiments/{experiment_id}: rename, re-goal, close, detach runs. */
  update(experimentId: string, body: RequestBody<'experiment_update'>, opts?: RequestOptions): Promise<ResponseBody<'experiment_update'>> {
    return this.patchJson(path`/experiments/${experimentId}`, body, opts);
  }
}

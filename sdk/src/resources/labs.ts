/** Labs the caller owns: list, describe, change visibility. */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { CursorPageBody } from '../models.ts';
import type { ListItem, QueryParams, RequestBody, ResponseBody, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

export type Lab = ListItem<'lab_list'>;

export class Labs extends Resource {
  /** GET /labs. */
  list(params: QueryParams<'lab_list'> = {}, opts?: RequestOptions): PageRequest<Lab, WithEnvelope<CursorPageBody<Lab>>> {
    return this.cursorList<Lab>('/labs', params, opts);
  }

  /** PATCH /labs/{lab_id}: title, description, content settings. */
  update(labId: string, body: RequestBody<'lab_update'>, opts?: RequestOptions): Promise<ResponseBody<'lab_update'>> {
    return this.patchJson(path`/labs/${labId}`, body, opts);
  }

  /** PUT /labs/{lab_id}/visibility: re-scope without a new release; deletes nothing. */
  setVisibility(labId: string, visibility: RequestBody<'lab_visibility_set'>['visibility'], opts?: RequestOptions): Promise<ResponseBody<'lab_visibility_set'>> {
    return this.putJson(path`/labs/${labId}/visibility`, { visibility }, opts);
  }
}

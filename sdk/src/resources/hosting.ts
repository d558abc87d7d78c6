/** Hosting of an owned lab: read, prepare and execute a hosting request, lifecycle changes. */
import type { RequestOptions } from '../core/http.ts';
import { path } from '../core/url.ts';
import type { RequestBody, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class Hosting extends Resource {
  /** GET /labs/{lab_id}/hosting. */
  get(labId: string, opts?: RequestOptions): Promise<ResponseBody<'hosting_get'>> {
    return this.getJson(path`/labs/${labId}/hosting`, undefined, opts);
  }

  /** PATCH /labs/{lab_id}/hosting: `{revision, action: pause|resume|retire}`. */
  update(labId: string, body: RequestBody<'hosting_update'>, opts?: RequestOptions): Promise<ResponseBody<'hosting_update'>> {
    return this.patchJson(path`/labs/${labId}/hosting`, body, opts);
  }

  /** POST /labs/{lab_id}/hosting-plans (Idempotency-Key required: sent automatically). */
  prepare(labId: string, body: RequestBody<'hosting_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'hosting_prepare'>> {
    return this.postJson(path`/labs/${labId}/hosting-plans`, body, opts);
  }

  /** POST /hosting-requests: execute an approved hosting plan. */
  execute(plan: RequestBody<'hosting_execute'>, opts?: RequestOptions): Promise<ResponseBody<'hosting_execute'>> {
    return this.postJson('/hosting-requests', plan, opts);
  }
}

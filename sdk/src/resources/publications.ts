/** Publication: digest a release candidate, then publish exactly that plan. */
import type { RequestOptions } from '../core/http.ts';
import type { RequestBody, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class Publications extends Resource {
  /** POST /publication-plans: validate and digest; never publishes. */
  prepare(body: RequestBody<'publish_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'publish_prepare'>> {
    return this.postJson('/publication-plans', body, opts);
  }

  /** POST /publications: publish an approved plan. */
  execute(plan: RequestBody<'publish_execute'>, opts?: RequestOptions): Promise<ResponseBody<'publish_execute'>> {
    return this.postJson('/publications', plan, opts);
  }
}

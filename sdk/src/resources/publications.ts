/** Publication: digest a release candidate, publish exactly that plan, then follow it. */
import type { RequestOptions } from '../core/http.ts';
import { path } from '../core/url.ts';
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

  /** GET /publications/{publication_id}: publishing, then published (its release) or failed (why). */
  get(publicationId: string, opts?: RequestOptions): Promise<ResponseBody<'publication_get'>> {
    return this.getJson(path`/publications/${publicationId}`, undefined, opts);
  }
}

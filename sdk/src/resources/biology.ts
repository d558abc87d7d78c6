/** Biology sources: search approved sources, fetch exact records as opaque resources. */
import type { RequestOptions } from '../core/http.ts';
import type { RequestBody, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class Biology extends Resource {
  /** POST /biology/search. */
  search(body: RequestBody<'biology_search'>, opts?: RequestOptions): Promise<ResponseBody<'biology_search'>> {
    return this.postJson('/biology/search', body, opts);
  }

  /** POST /biology/fetch. */
  fetch(body: RequestBody<'biology_fetch'>, opts?: RequestOptions): Promise<ResponseBody<'biology_fetch'>> {
    return this.postJson('/biology/fetch', body, opts);
  }
}

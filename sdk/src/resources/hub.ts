/** The Hub: search and inspect published (immutable) releases. */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { CursorPageBody } from '../models.ts';
import type { ListItem, QueryParams, ResponseBody, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

export type HubRelease = ListItem<'hub_search'>;

export class Hub extends Resource {
  /** GET /hub/search; `tags` repeat as `tags=a&tags=b`. */
  search(params: QueryParams<'hub_search'> = {}, opts?: RequestOptions): PageRequest<HubRelease, WithEnvelope<CursorPageBody<HubRelease>>> {
    return this.cursorList<HubRelease>('/hub/search', params, opts);
  }

  /** GET /hub/releases/{reference}, e.g. `platform/sir-epidemic@1.0.0`. */
  inspect(reference: string, opts?: RequestOptions): Promise<ResponseBody<'hub_inspect'>> {
    return this.getJson(path`/hub/releases/${reference}`, undefined, opts);
  }
}

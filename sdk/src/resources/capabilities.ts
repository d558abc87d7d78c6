/** Capabilities: runnable lab versions and their declared input/output contracts. */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { CursorPageBody } from '../models.ts';
import type { ListItem, QueryParams, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export type Capability = ListItem<'capability_list'>;

export class Capabilities extends Resource {
  /** GET /capabilities (plain bodies, no envelope). */
  list(params: QueryParams<'capability_list'> = {}, opts?: RequestOptions): PageRequest<Capability, CursorPageBody<Capability> & ResponseBody<'capability_list'>> {
    return this.cursorList<Capability>('/capabilities', params, opts) as PageRequest<Capability, CursorPageBody<Capability> & ResponseBody<'capability_list'>>;
  }

  /** GET /capabilities/{namespace}/{name}: the latest accessible version's contract. Also accepts `get('ns/name')`. */
  get(namespaceOrRef: string, name?: string, opts?: RequestOptions): Promise<ResponseBody<'capability_get'>> {
    const [ns, n] = name === undefined ? namespaceOrRef.replace(/@.*$/, '').split('/') : [namespaceOrRef, name];
    return this.getJson(path`/capabilities/${ns ?? ''}/${n ?? ''}`, undefined, opts);
  }
}

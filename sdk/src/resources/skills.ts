/** Published workflow skills, verified by the server against their checksums. */
import type { RequestOptions } from '../core/http.ts';
import { path } from '../core/url.ts';
import type { QueryParams, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class Skills extends Resource {
  /** GET /skills. */
  list(opts?: RequestOptions): Promise<ResponseBody<'skill_list'>> {
    return this.getJson('/skills', undefined, opts);
  }

  /** GET /skills/{name}, optionally one file (`path`, default SKILL.md). */
  get(name: string, params: QueryParams<'skill_get'> = {}, opts?: RequestOptions): Promise<ResponseBody<'skill_get'>> {
    return this.getJson(path`/skills/${name}`, params, opts);
  }
}

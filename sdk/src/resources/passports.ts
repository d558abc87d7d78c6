/** Passports: signed per-check evidence for one owned subject (not a validity score). */
import type { RequestOptions } from '../core/http.ts';
import type { QueryParams, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class Passports extends Resource {
  /** GET /passports for exactly one subject: `{run_id}`, `{workspace_id, revision_id}` or `{passport_id}`. */
  get(params: QueryParams<'passport_get'>, opts?: RequestOptions): Promise<ResponseBody<'passport_get'>> {
    return this.getJson('/passports', params, opts);
  }
}

/** Passports: signed per-check evidence for one owned subject (not a validity score). */
import type { RequestOptions } from '../core/http.ts';
import type { QueryParams, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class Passports extends Resource {
  /**
   * GET /passports for exactly one subject: `{run_id}` or `{workspace_id, revision_id}`
   * builds a new passport from evidence re-derived now; `{passport_id}` returns a stored
   * one exactly as signed. Check it offline with `verifyPassport(passport, keys)`.
   */
  get(params: QueryParams<'passport_get'>, opts?: RequestOptions): Promise<ResponseBody<'passport_get'>> {
    return this.getJson('/passports', params, opts);
  }

  /** GET /passports/keys: every signing key's public half, retired ones included. */
  keys(opts?: RequestOptions): Promise<ResponseBody<'passport_keys_list'>> {
    return this.getJson('/passports/keys', undefined, opts);
  }
}

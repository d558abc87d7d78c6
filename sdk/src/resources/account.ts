/** The connected account: namespace, this key's access, usage and holdings. */
import type { RequestOptions } from '../core/http.ts';
import type { ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class Account extends Resource {
  /** GET /account. */
  get(opts?: RequestOptions): Promise<ResponseBody<'account_get'>> {
    return this.getJson('/account', undefined, opts);
  }
}

/** Compute profiles: CPU/GPU options with prices (an id goes in `compute_profile`). */
import type { RequestOptions } from '../core/http.ts';
import type { ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class ComputeProfiles extends Resource {
  /** GET /compute-profiles (one unpaginated list). */
  list(opts?: RequestOptions): Promise<ResponseBody<'compute_profile_list'>> {
    return this.getJson('/compute-profiles', undefined, opts);
  }
}

/** Datasets: immutable private versions registered from uploaded files. */
import type { RequestOptions } from '../core/http.ts';
import { offsetPages, type PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { QueryParams, RequestBody, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

/** A dataset version. */
export type Dataset = ResponseBody<'dataset_list'>['items'][number];
export type DatasetPageBody = ResponseBody<'dataset_list'>;

export class Datasets extends Resource {
  /** GET /datasets (limit/offset, unlike the cursor lists). Await for one page, iterate for all. */
  list(params: QueryParams<'dataset_list'> = {}, opts?: RequestOptions): PageRequest<Dataset, DatasetPageBody> {
    return offsetPages((offset) => this.getJson<DatasetPageBody>('/datasets', { ...params, offset }, opts), params.offset ?? 0);
  }

  /** POST /datasets: register a version; split leakage is rejected (422 `split_leakage`). */
  register(body: RequestBody<'dataset_register'>, opts?: RequestOptions): Promise<ResponseBody<'dataset_register'>> {
    return this.postJson('/datasets', body, opts);
  }

  /** GET /datasets/{dataset_id}: the manifest with retained file identities. */
  get(datasetId: string, opts?: RequestOptions): Promise<ResponseBody<'dataset_get'>> {
    return this.getJson(path`/datasets/${datasetId}`, undefined, opts);
  }
}

/** PEtab: plan the import of a problem (the petab library's lint, its value at nominal), import exactly that plan, read what it made. */
import type { RequestOptions } from '../core/http.ts';
import { path } from '../core/url.ts';
import type { RequestBody, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export type PetabImport = ResponseBody<'petab_import_get'>;
export type PetabImportPlan = ResponseBody<'petab_import_prepare'>;

export class Petab extends Resource {
  /** POST /petab-import-plans: lint, evaluate at nominal and plan the lab, dataset and design; creates nothing. */
  prepareImport(body: RequestBody<'petab_import_prepare'>, opts?: RequestOptions): Promise<PetabImportPlan> {
    return this.postJson('/petab-import-plans', body, opts);
  }

  /** POST /petab-imports: import an approved plan (the lab, the dataset and the design, at once or none). */
  executeImport(plan: RequestBody<'petab_import_execute'>, opts?: RequestOptions): Promise<ResponseBody<'petab_import_execute'>> {
    return this.postJson('/petab-imports', plan, opts);
  }

  /** GET /petab-imports/{import_id}. */
  getImport(importId: string, opts?: RequestOptions): Promise<PetabImport> {
    return this.getJson(path`/petab-imports/${importId}`, undefined, opts);
  }
}

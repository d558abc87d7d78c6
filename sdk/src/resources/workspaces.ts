/** Workspaces: private editable labs whose every change is an immutable revision. */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { CursorPageBody } from '../models.ts';
import type { ListItem, QueryParams, RequestBody, ResponseBody, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

export type Workspace = ListItem<'workspace_list'>;

export class Workspaces extends Resource {
  /** GET /workspaces, most recently changed first. */
  list(params: QueryParams<'workspace_list'> = {}, opts?: RequestOptions): PageRequest<Workspace, WithEnvelope<CursorPageBody<Workspace>>> {
    return this.cursorList<Workspace>('/workspaces', params, opts);
  }

  /** POST /workspaces: a new workspace, or a fork of an exact Hub release (`fork: {reference, sha256}`). */
  create(body: RequestBody<'workspace_create'>, opts?: RequestOptions): Promise<ResponseBody<'workspace_create'>> {
    return this.postJson('/workspaces', body, opts);
  }

  /** GET /workspaces/{workspace_id}, optionally at `revision_id`. */
  get(workspaceId: string, params: QueryParams<'workspace_get'> = {}, opts?: RequestOptions): Promise<ResponseBody<'workspace_get'>> {
    return this.getJson(path`/workspaces/${workspaceId}`, params, opts);
  }

  /** POST /workspaces/{workspace_id}/change-plans: validate and digest a change; changes nothing. */
  prepareChange(workspaceId: string, body: RequestBody<'workspace_change_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'workspace_change_prepare'>> {
    return this.postJson(path`/workspaces/${workspaceId}/change-plans`, body, opts);
  }

  /** POST /workspace-revisions: apply one approved plan as a new revision. */
  applyChange(plan: RequestBody<'workspace_change_apply'>, opts?: RequestOptions): Promise<ResponseBody<'workspace_change_apply'>> {
    return this.postJson('/workspace-revisions', plan, opts);
  }
}

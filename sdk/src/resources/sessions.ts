/** Sessions: durable collaboration records (contract, execution plan, progress, validation). */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { CursorPageBody } from '../models.ts';
import type { ListItem, QueryParams, RequestBody, ResponseBody, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

export type Session = ListItem<'session_list'>;

export class Sessions extends Resource {
  /** POST /sessions. */
  create(body: RequestBody<'session_create'>, opts?: RequestOptions): Promise<ResponseBody<'session_create'>> {
    return this.postJson('/sessions', body, opts);
  }

  /** GET /sessions. */
  list(params: QueryParams<'session_list'> = {}, opts?: RequestOptions): PageRequest<Session, WithEnvelope<CursorPageBody<Session>>> {
    return this.cursorList<Session>('/sessions', params, opts);
  }

  /** GET /sessions/{session_id}. */
  get(sessionId: string, opts?: RequestOptions): Promise<ResponseBody<'session_get'>> {
    return this.getJson(path`/sessions/${sessionId}`, undefined, opts);
  }

  /** POST /sessions/{session_id}/external-sessions. */
  attachExternal(sessionId: string, body: RequestBody<'session_external_attach'>, opts?: RequestOptions): Promise<ResponseBody<'session_external_attach'>> {
    return this.postJson(path`/sessions/${sessionId}/external-sessions`, body, opts);
  }

  /** POST /sessions/{session_id}/contract-plans. */
  prepareContract(sessionId: string, body: RequestBody<'session_contract_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'session_contract_prepare'>> {
    return this.postJson(path`/sessions/${sessionId}/contract-plans`, body, opts);
  }

  /** POST /sessions/{session_id}/execution-plans. */
  prepareExecution(sessionId: string, body: RequestBody<'session_execution_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'session_execution_prepare'>> {
    return this.postJson(path`/sessions/${sessionId}/execution-plans`, body, opts);
  }

  /** POST /session-changes: apply an approved contract or execution plan. */
  applyChange(plan: RequestBody<'session_change_apply'>, opts?: RequestOptions): Promise<ResponseBody<'session_change_apply'>> {
    return this.postJson('/session-changes', plan, opts);
  }

  /** POST /sessions/{session_id}/progress. */
  recordProgress(sessionId: string, body: RequestBody<'session_progress_record'>, opts?: RequestOptions): Promise<ResponseBody<'session_progress_record'>> {
    return this.postJson(path`/sessions/${sessionId}/progress`, body, opts);
  }

  /** POST /sessions/{session_id}/validation. */
  validate(sessionId: string, body: RequestBody<'session_validate'> = {}, opts?: RequestOptions): Promise<ResponseBody<'session_validate'>> {
    return this.postJson(path`/sessions/${sessionId}/validation`, body, opts);
  }

  /** POST /sessions/{session_id}/completion. */
  checkCompletion(sessionId: string, opts?: RequestOptions): Promise<ResponseBody<'session_completion_check'>> {
    return this.postJson(path`/sessions/${sessionId}/completion`, {}, opts);
  }

  /** POST /sessions/{session_id}/workspace. */
  createWorkspace(sessionId: string, body: RequestBody<'session_workspace_create'> = {}, opts?: RequestOptions): Promise<ResponseBody<'session_workspace_create'>> {
    return this.postJson(path`/sessions/${sessionId}/workspace`, body, opts);
  }
}

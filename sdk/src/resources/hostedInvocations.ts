/** Hosted invocations: plan, execute, read and cancel calls of a hosted lab. */
import type { RequestOptions } from '../core/http.ts';
import { path } from '../core/url.ts';
import type { QueryParams, RequestBody, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

export class HostedInvocations extends Resource {
  /** GET /hosted-releases/{reference}?sha256=: hosting inputs and bounds of an exact release. */
  release(reference: string, sha256: string, opts?: RequestOptions): Promise<ResponseBody<'hosted_release_get'>> {
    return this.getJson(path`/hosted-releases/${reference}`, { sha256 }, opts);
  }

  /** POST /hosted-invocation-plans (Idempotency-Key required: sent automatically). */
  prepare(body: RequestBody<'hosted_invocation_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'hosted_invocation_prepare'>> {
    return this.postJson('/hosted-invocation-plans', body, opts);
  }

  /** POST /hosted-invocations: enqueue an approved invocation once. */
  execute(plan: RequestBody<'hosted_invocation_execute'>, opts?: RequestOptions): Promise<ResponseBody<'hosted_invocation_execute'>> {
    return this.postJson('/hosted-invocations', plan, opts);
  }

  /** GET /hosted-invocations/{invocation_id}. */
  get(invocationId: string, opts?: RequestOptions): Promise<ResponseBody<'hosted_invocation_get'>> {
    return this.getJson(path`/hosted-invocations/${invocationId}`, undefined, opts);
  }

  /** POST /hosted-invocations/{invocation_id}/cancel; terminal invocations are unchanged. */
  cancel(invocationId: string, opts?: RequestOptions): Promise<ResponseBody<'hosted_invocation_cancel'>> {
    return this.postJson(path`/hosted-invocations/${invocationId}/cancel`, undefined, opts);
  }

  /** GET /hosted-invocations/{invocation_id}/artifacts/{port}/metadata. */
  artifact(invocationId: string, port: string, params: QueryParams<'hosted_invocation_artifact_get'> = {}, opts?: RequestOptions): Promise<ResponseBody<'hosted_invocation_artifact_get'>> {
    return this.getJson(path`/hosted-invocations/${invocationId}/artifacts/${port}/metadata`, params, opts);
  }
}

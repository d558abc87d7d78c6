/** Hosted invocations: plan, execute, read and cancel calls of a hosted lab. */
import type { RequestOptions } from '../core/http.ts';
import { path } from '../core/url.ts';
import { InvocationFailed } from '../errors.ts';
import { InvocationHandle, type InvocationWaitOptions } from '../invocationHandle.ts';
import type { QueryParams, RequestBody, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';
import { CREATION_WAIT_SECONDS, preferWaitHeaders, waitSecondsWithin } from '../core/preferWait.ts';

export class HostedInvocations extends Resource {
  /** GET /hosted-releases/{reference}?sha256=: hosting inputs and bounds of an exact release. */
  release(reference: string, sha256: string, opts?: RequestOptions): Promise<ResponseBody<'hosted_release_get'>> {
    return this.getJson(path`/hosted-releases/${reference}`, { sha256 }, opts);
  }

  /** POST /hosted-invocation-plans (Idempotency-Key required: sent automatically). */
  prepare(body: RequestBody<'hosted_invocation_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'hosted_invocation_prepare'>> {
    return this.postJson('/hosted-invocation-plans', body, opts);
  }

  /** POST /hosted-invocations: enqueue an approved invocation once (`opts.headers` may carry `Prefer: wait=N`). */
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

  /** A handle on an existing invocation (no request is made). */
  handle(invocationId: string): InvocationHandle {
    return new InvocationHandle(this, invocationId);
  }

  /**
   * Reads an invocation every `pollIntervalMs` (default 100) until it has ended
   * (completed, failed, cancelled or expired) and returns it however it ended;
   * InvocationTimeout when `timeoutMs` passes first (the invocation goes on).
   */
  wait(invocationId: string, o: InvocationWaitOptions = {}): Promise<HostedInvocation> {
    return this.handle(invocationId).ended(o);
  }

  /**
   * Plans the invocation of an exact hosted release with these inputs (the plan binds
   * them, this key's client and the price) and executes exactly that plan; returns its
   * handle. With `waitSeconds`, the execution's answer waits up to that long for the
   * invocation to end (`Prefer: wait`, at most 60; keep it under the client's
   * per-request timeout), and the handle holds it as last seen. InvocationFailed when
   * the plan is not ready.
   */
  async start(reference: string, sha256: string, inputs: Record<string, unknown>, o: { seed?: number; waitSeconds?: number; signal?: AbortSignal } = {}): Promise<InvocationHandle> {
    const plan = await this.prepare({ reference, sha256, inputs, ...(o.seed === undefined ? {} : { seed: o.seed }) } as RequestBody<'hosted_invocation_prepare'>, { signal: o.signal });
    if (plan.status !== 'ready') throw new InvocationFailed(null, `the invocation plan is ${plan.status}: ${JSON.stringify(plan.findings)}`);
    const started = await this.execute({ plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { signal: o.signal, ...preferWaitHeaders(o.waitSeconds) }) as unknown as HostedInvocation;
    return new InvocationHandle(this, started.invocation_id, started);
  }

  /**
   * One call: start (plan and execute, its answer waiting for the ending) and wait. The
   * completed invocation, or InvocationFailed when it does not complete; InvocationTimeout
   * once `timeoutMs` has passed since the call.
   */
  async invoke(reference: string, sha256: string, inputs: Record<string, unknown>, o: { seed?: number } & InvocationWaitOptions = {}): Promise<HostedInvocation> {
    const called = Date.now();
    const waitSeconds = waitSecondsWithin(CREATION_WAIT_SECONDS, o.timeoutMs, this.http.config.timeoutMs);
    const handle = await this.start(reference, sha256, inputs, { ...o, waitSeconds });
    return handle.wait({ ...o, ...(o.timeoutMs === undefined ? {} : { timeoutMs: Math.max(0, o.timeoutMs - (Date.now() - called)) }) });
  }

  /** GET /hosted-invocations/{invocation_id}/artifacts/{port}/metadata. */
  artifact(invocationId: string, port: string, params: QueryParams<'hosted_invocation_artifact_get'> = {}, opts?: RequestOptions): Promise<ResponseBody<'hosted_invocation_artifact_get'>> {
    return this.getJson(path`/hosted-invocations/${invocationId}/artifacts/${port}/metadata`, params, opts);
  }
}

/** A hosted invocation as GET /hosted-invocations/{id} answers it (the fields used here). */
export interface HostedInvocation {
  invocation_id: string;
  status: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'expired';
  reference: string;
  outputs: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  credits_settled: number | null;
  artifacts: Array<{ port: string; file_name: string; content_type: string; size_bytes: number; sha256: string }>;
  [k: string]: unknown;
}

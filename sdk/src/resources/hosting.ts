/** Hosting of an owned lab: read, prepare and execute a hosting request, lifecycle changes. */
import type { RequestOptions } from '../core/http.ts';
import { sleep } from '../core/retry.ts';
import { path } from '../core/url.ts';
import { HostingEnded } from '../errors.ts';
import type { Envelope, RequestBody, ResponseBody } from '../types.ts';
import { Resource } from './resource.ts';

/** A lab's hosting as GET /labs/{lab_id}/hosting answers it. */
export type HostingView = Omit<ResponseBody<'hosting_get'>, keyof Envelope>;

/** Where a hosting can go no further. */
const ENDED: ReadonlyArray<HostingView['status']> = ['retired', 'failed', 'rejected'];

export class Hosting extends Resource {
  /** GET /labs/{lab_id}/hosting. */
  get(labId: string, opts?: RequestOptions): Promise<ResponseBody<'hosting_get'>> {
    return this.getJson(path`/labs/${labId}/hosting`, undefined, opts);
  }

  /** PATCH /labs/{lab_id}/hosting: `{revision, action: pause|resume|retire}`; a stale revision is a ConflictError (`revision_conflict`). */
  update(labId: string, body: RequestBody<'hosting_update'>, opts?: RequestOptions): Promise<ResponseBody<'hosting_update'>> {
    return this.patchJson(path`/labs/${labId}/hosting`, body, opts);
  }

  /** POST /labs/{lab_id}/hosting-plans (Idempotency-Key required: sent automatically). */
  prepare(labId: string, body: RequestBody<'hosting_prepare'>, opts?: RequestOptions): Promise<ResponseBody<'hosting_prepare'>> {
    return this.postJson(path`/labs/${labId}/hosting-plans`, body, opts);
  }

  /** POST /hosting-requests: execute an approved hosting plan. */
  execute(plan: RequestBody<'hosting_execute'>, opts?: RequestOptions): Promise<ResponseBody<'hosting_execute'>> {
    return this.postJson('/hosting-requests', plan, opts);
  }

  /**
   * One call for what the owner has approved: prepare the hosting plan (the exact
   * release, compute bounds, standing cost) and execute exactly that plan. Returns the
   * recorded request, which is not yet a ready deployment: `waitFor(labId, ['ready'])`.
   * A plan that is not ready (blocked by a finding) raises HostingEnded with its findings.
   */
  async request(labId: string, body: RequestBody<'hosting_prepare'>, opts?: RequestOptions): Promise<HostingView> {
    const plan = await this.prepare(labId, body, opts);
    if (plan.status !== 'ready') throw new HostingEnded(null, `the hosting plan is ${plan.status}: ${JSON.stringify(plan.findings)}`);
    return await this.execute({ plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, opts) as unknown as HostingView;
  }

  /** Pauses a ready deployment (invocations are refused until resumed), at `revision` or the current one. */
  pause(labId: string, o: { revision?: number } & RequestOptions = {}): Promise<HostingView> {
    return this.change(labId, 'pause', o);
  }

  /** Resumes a paused deployment. */
  resume(labId: string, o: { revision?: number } & RequestOptions = {}): Promise<HostingView> {
    return this.change(labId, 'resume', o);
  }

  /** Retires the hosting: its warm instances stop and it ends. */
  retire(labId: string, o: { revision?: number } & RequestOptions = {}): Promise<HostingView> {
    return this.change(labId, 'retire', o);
  }

  /**
   * Reads the hosting every `pollIntervalMs` (default 500) until its status is one of
   * `statuses`, and returns it. Ending anywhere else (retired, failed, rejected) raises
   * HostingEnded; `timeoutMs` gives up with an error (the lifecycle goes on).
   */
  async waitFor(labId: string, statuses: ReadonlyArray<HostingView['status']>, o: { timeoutMs?: number; pollIntervalMs?: number; signal?: AbortSignal } = {}): Promise<HostingView> {
    const deadline = o.timeoutMs === undefined ? Infinity : Date.now() + o.timeoutMs;
    for (;;) {
      const h = await this.get(labId, { signal: o.signal }) as unknown as HostingView;
      if (statuses.includes(h.status)) return h;
      if (ENDED.includes(h.status)) throw new HostingEnded(h);
      if (Date.now() > deadline) throw new Error(`hosting of ${labId} is still ${h.status} after ${o.timeoutMs} ms (it goes on)`);
      await sleep(o.pollIntervalMs ?? 500, o.signal);
    }
  }

  /** A lifecycle change at the given revision, or at the one read now. */
  private async change(labId: string, action: 'pause' | 'resume' | 'retire', o: { revision?: number } & RequestOptions): Promise<HostingView> {
    const { revision, ...opts } = o;
    const at = revision ?? (await this.get(labId, opts) as unknown as HostingView).revision;
    return await this.update(labId, { revision: at, action }, opts) as unknown as HostingView;
  }
}

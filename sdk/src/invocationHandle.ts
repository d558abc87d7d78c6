/**
 * An InvocationHandle is a hosted invocation's id plus the calls that act on it, as a
 * RunHandle is a run's: read it, wait for it, cancel it, read an output port's artifact.
 * It holds nothing but the last record it saw, so it may be kept and used again later.
 */
import type { RequestOptions } from './core/http.ts';
import { sleep } from './core/retry.ts';
import { InvocationFailed, InvocationTimeout } from './errors.ts';
import type { QueryParams, ResponseBody } from './types.ts';
import type { HostedInvocation, HostedInvocations } from './resources/hostedInvocations.ts';

export interface InvocationWaitOptions {
  /** Give up (InvocationTimeout) after this long; the invocation itself goes on. Default: no limit. */
  timeoutMs?: number;
  /** Between reads. Default 100 (invocations are short). */
  pollIntervalMs?: number;
  signal?: AbortSignal;
}

const ENDED: readonly string[] = ['completed', 'failed', 'cancelled', 'expired'];

export class InvocationHandle {
  /** The last invocation record this handle read (or was created with). */
  lastSeen: HostedInvocation | undefined;

  private readonly invocations: HostedInvocations;
  readonly id: string;
  constructor(invocations: HostedInvocations, id: string, lastSeen?: HostedInvocation) {
    this.invocations = invocations;
    this.id = id;
    this.lastSeen = lastSeen;
  }

  /** Reads the invocation now. */
  async get(opts?: RequestOptions): Promise<HostedInvocation> {
    const inv = await this.invocations.get(this.id, opts) as unknown as HostedInvocation;
    this.lastSeen = inv;
    return inv;
  }

  /**
   * Reads the invocation until it has ended (completed, failed, cancelled or expired) and
   * returns it however it ended; InvocationTimeout, carrying this handle, when `timeoutMs`
   * passes first. One last seen ended (its execution's answer waited for it) is not read again.
   */
  async ended(o: InvocationWaitOptions = {}): Promise<HostedInvocation> {
    if (this.lastSeen && ENDED.includes(this.lastSeen.status)) return this.lastSeen;
    const deadline = o.timeoutMs === undefined ? Infinity : Date.now() + o.timeoutMs;
    for (;;) {
      const inv = await this.get({ signal: o.signal });
      if (ENDED.includes(inv.status)) return inv;
      const left = deadline - Date.now();
      if (left <= 0) throw new InvocationTimeout(this, inv, o.timeoutMs ?? 0);
      await sleep(Math.min(o.pollIntervalMs ?? 100, left), o.signal);
    }
  }

  /** Waits until it has ended: the completed invocation, or InvocationFailed (InvocationTimeout as `ended`). */
  async wait(o: InvocationWaitOptions = {}): Promise<HostedInvocation> {
    const inv = await this.ended(o);
    if (inv.status !== 'completed') throw new InvocationFailed(inv);
    return inv;
  }

  /** Records cancellation and revokes the lease; an ended invocation is unchanged. */
  async cancel(opts?: RequestOptions): Promise<HostedInvocation> {
    const inv = await this.invocations.cancel(this.id, opts) as unknown as HostedInvocation;
    this.lastSeen = inv;
    return inv;
  }

  /** The artifact on an output port: identities always, bounded bytes with `include_content`. */
  artifact(port: string, params: QueryParams<'hosted_invocation_artifact_get'> = {}, opts?: RequestOptions): Promise<ResponseBody<'hosted_invocation_artifact_get'>> {
    return this.invocations.artifact(this.id, port, params, opts);
  }
}

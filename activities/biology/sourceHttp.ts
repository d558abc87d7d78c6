import { guardedLookup, literalNotPublic } from '../../kernel/http/guardedLookup.ts';
import { Agent, request, type Dispatcher } from 'undici';
import type { BiologySource } from '../../kernel/config.ts';

/**
 * Why a source did not answer what was asked. `retryable` failures (the source busy or
 * down, 429 with its Retry-After) are retried by the activity's policy; the rest are the
 * answer.
 */
export class SourceError extends Error {
  readonly code: 'source_unavailable' | 'source_rate_limited' | 'source_refused' | 'record_not_found' | 'record_too_large'
      | 'source_redirect_refused' | 'source_address_refused' | 'source_host_not_registered';
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(
    code: 'source_unavailable' | 'source_rate_limited' | 'source_refused' | 'record_not_found' | 'record_too_large'
      | 'source_redirect_refused' | 'source_address_refused' | 'source_host_not_registered',
    message: string,
    retryable = false,
    retryAfterMs?: number,
  ) {
    super(message);
    this.code = code;
    this.retryable = retryable;
    this.retryAfterMs = retryAfterMs;
  }
}

/** One answer of a source: its status, headers and a body read under the byte bound. */
export interface SourceAnswer { status: number; url: string; headers: Record<string, string>; body: AsyncIterable<Buffer>; }

const MAX_REDIRECTS = 3;

/** Milliseconds a `Retry-After` header asks for (seconds or an HTTP date), if it says. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The only way a worker reaches a biology source: to its registered hosts alone, each
 * connection's addresses checked after DNS resolution, redirects followed only within
 * those hosts, the whole exchange under the source's timeout, and bodies read under a
 * byte bound while they stream. Statuses are mapped to SourceError: 404 record_not_found,
 * 429 source_rate_limited (with Retry-After), 5xx source_unavailable (both retryable),
 * other 4xx source_refused.
 */
export function createSourceHttp(source: BiologySource, opts: { allowPrivateAddresses: boolean }) {
  const hosts = new Set(Object.values(source.urls).map((u) => new URL(u).host));
  const agent = new Agent({
    connect: {
      lookup: guardedLookup(opts.allowPrivateAddresses, (host, address) => new SourceError('source_address_refused', `${host} resolves to ${address}, which is not a public address.`)),
      timeout: source.timeoutMs,
    },
    headersTimeout: source.timeoutMs, bodyTimeout: source.timeoutMs,
  });

  const checkTarget = (url: URL, what: string) => {
    if (!['http:', 'https:'].includes(url.protocol) || !hosts.has(url.host)) {
      throw new SourceError(what === 'redirect' ? 'source_redirect_refused' : 'source_host_not_registered', `${source.id} is not reached at ${url.host} (${what}); only its registered hosts are.`);
    }
    if (!opts.allowPrivateAddresses && literalNotPublic(url)) {
      throw new SourceError('source_address_refused', `${url.host} is not a public address.`);
    }
  };

  /** Reads `body` to the end, refusing more than `limit` bytes. */
  async function bounded(body: AsyncIterable<Buffer>, limit: number, what: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      size += chunk.length;
      if (size > limit) throw new SourceError('record_too_large', `${source.id} sent more than ${limit} bytes for ${what}.`);
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
  }

  /** One request, redirects followed within the source's hosts; the body is the caller's to read (or `drain`). */
  async function send(target: string, init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {}): Promise<SourceAnswer> {
    let url = new URL(target);
    const deadline = AbortSignal.timeout(source.timeoutMs);
    for (let hop = 0; ; hop++) {
      checkTarget(url, hop === 0 ? 'request' : 'redirect');
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, {
          method: init.method ?? 'GET', headers: { 'user-agent': 'silico-biology/1 (+https://silico.example/biology)', ...init.headers }, body: init.body,
          dispatcher: agent, signal: deadline,
        });
      } catch (err) {
        if (err instanceof SourceError) throw err;
        if ((err as { cause?: unknown }).cause instanceof SourceError) throw (err as { cause: SourceError }).cause;
        throw new SourceError('source_unavailable', `${source.id} did not answer: ${(err as Error).message}`, true);
      }
      const headers = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v ?? '')]));
      if (res.statusCode >= 300 && res.statusCode < 400 && headers.location) {
        await res.body.dump();
        if (hop >= MAX_REDIRECTS) throw new SourceError('source_unavailable', `${source.id} redirected more than ${MAX_REDIRECTS} times.`, true);
        url = new URL(headers.location, url);
        continue;
      }
      if (res.statusCode >= 400) {
        await res.body.dump();
        if (res.statusCode === 404) throw new SourceError('record_not_found', `${source.id} has no such record (${url.pathname}).`);
        if (res.statusCode === 429) throw new SourceError('source_rate_limited', `${source.id} asked us to slow down.`, true, retryAfterMs(headers['retry-after']));
        if (res.statusCode >= 500) throw new SourceError('source_unavailable', `${source.id} answered ${res.statusCode}.`, true, retryAfterMs(headers['retry-after']));
        throw new SourceError('source_refused', `${source.id} refused the request (${res.statusCode}).`);
      }
      return { status: res.statusCode, url: url.toString(), headers, body: res.body };
    }
  }

  return {
    send,
    bounded,
    /** A JSON answer (bounded); null for 204 No Content. */
    async json<T>(target: string, init?: Parameters<typeof send>[1], limit = 8 * 1024 * 1024): Promise<T | null> {
      const res = await send(target, init);
      const bytes = await bounded(res.body, limit, target);
      if (res.status === 204 || bytes.length === 0) return null;
      try {
        return JSON.parse(bytes.toString('utf8')) as T;
      } catch {
        throw new SourceError('source_unavailable', `${source.id} answered something that is not JSON.`, true);
      }
    },
    close: () => agent.close(),
  };
}

export type SourceHttp = ReturnType<typeof createSourceHttp>;

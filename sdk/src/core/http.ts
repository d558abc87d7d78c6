/**
 * The one place requests are made. Each logical call gets one Idempotency-Key (the
 * caller's, or a fresh UUID) that every retry of it reuses, so a retry after a lost
 * answer replays the first result instead of doing the work twice. Retries follow
 * `retry.ts`; every non-2xx answer becomes a typed ApiError (`errors.ts`).
 */
import { ConnectionError, ConnectionTimeoutError, SilicoError, errorFromResponse } from '../errors.ts';
import { isRetryableStatus, parseRetryAfter, retryDelayMs, sleep, type RetryPolicy } from './retry.ts';
import { queryString, type QueryInput } from './url.ts';

/** Per-call options every SDK method accepts last. */
export interface RequestOptions {
  /** Reused by every retry of this call; defaults to a fresh UUID per call (POST/PATCH/PUT). */
  idempotencyKey?: string;
  /** Per attempt, until the answer (for downloads: until the response headers). */
  timeoutMs?: number;
  /** Overrides the client's maxRetries for this call. */
  maxRetries?: number;
  /** Aborts the call, including any backoff sleep. */
  signal?: AbortSignal;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

export interface HttpConfig {
  apiKey: string;
  /** Ends in the version prefix, e.g. `https://api.example.com/v1` (no trailing slash). */
  baseUrl: string;
  timeoutMs: number;
  retry: RetryPolicy;
  fetch: typeof globalThis.fetch;
  /** Absent in browsers, which name themselves. */
  userAgent: string | undefined;
}

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface HttpRequest {
  method: Method;
  /** Relative to baseUrl, starting with `/`. */
  path: string;
  query?: QueryInput;
  /** JSON body. */
  body?: unknown;
  /** Multipart body; a factory because every attempt needs a fresh one. */
  form?: () => FormData;
  accept?: string;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: SilicoError; retryAfterMs?: number };

export class HttpClient {
  readonly config: HttpConfig;
  constructor(config: HttpConfig) {
    this.config = config;
  }

  /** Sends a request and parses its JSON answer. */
  async json<T>(req: HttpRequest, opts: RequestOptions = {}): Promise<T> {
    return this.send(req, opts, true, async (res) => {
      const text = await res.text();
      try {
        return (text ? JSON.parse(text) : {}) as T;
      } catch {
        throw new SilicoError(`${req.method} ${req.path}: the ${res.status} answer is not JSON`);
      }
    });
  }

  /**
   * Sends a request and returns the 2xx Response with its body unread (downloads,
   * event streams). The timeout covers the wait for headers only: a large body may
   * legitimately take longer than any request timeout.
   */
  async stream(req: HttpRequest, opts: RequestOptions = {}): Promise<Response> {
    return this.send(req, opts, false, async (res) => res);
  }

  private async send<T>(req: HttpRequest, opts: RequestOptions, timeBody: boolean, read: (res: Response) => Promise<T>): Promise<T> {
    const writes = req.method !== 'GET';
    // One key per logical call, generated before the first attempt: retries reuse it.
    const idempotencyKey = writes ? (opts.idempotencyKey ?? globalThis.crypto.randomUUID()) : undefined;
    const policy = { ...this.config.retry, maxRetries: opts.maxRetries ?? this.config.retry.maxRetries };
    for (let retry = 0; ; retry++) {
      const outcome = await this.attempt(req, opts, idempotencyKey, timeBody, read);
      if (outcome.ok) return outcome.value;
      const delay = retryDelayMs(retry + 1, outcome.retryAfterMs, policy);
      if (delay === null) throw outcome.error;
      await sleep(delay, opts.signal);
    }
  }

  /** One attempt: a value, a retryable failure, or a thrown final error. */
  private async attempt<T>(
    req: HttpRequest, opts: RequestOptions, idempotencyKey: string | undefined, timeBody: boolean, read: (res: Response) => Promise<T>,
  ): Promise<Outcome<T>> {
    opts.signal?.throwIfAborted();
    const timeoutMs = opts.timeoutMs ?? this.config.timeoutMs;
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    // The caller's signal stays wired to a streamed body after this returns, so it can
    // still abort a download; for JSON answers it is unhooked once the body is read.
    const onAbort = () => controller.abort(opts.signal!.reason);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let streaming = false;
    const done = () => {
      clearTimeout(timer);
      if (!streaming) opts.signal?.removeEventListener('abort', onAbort);
    };
    const what = `${req.method} ${req.path}`;
    try {
      const res = await this.config.fetch(this.config.baseUrl + req.path + queryString(req.query), {
        method: req.method,
        headers: this.headers(req, opts, idempotencyKey),
        body: req.form ? req.form() : req.body === undefined ? undefined : JSON.stringify(req.body),
        signal: controller.signal,
      });
      if (res.ok) {
        streaming = !timeBody;
        if (streaming) done();
        return { ok: true, value: await read(res) };
      }
      const error = errorFromResponse(res.status, res.headers, await res.text());
      if (!isRetryableStatus(res.status, error.code)) throw error;
      return { ok: false, error, retryAfterMs: parseRetryAfter(res.headers.get('retry-after')) };
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      if (err instanceof SilicoError) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const detail = cause?.code ?? cause?.message ?? (err as Error).message;
      const error = timedOut
        ? new ConnectionTimeoutError(`${what}: no answer within ${timeoutMs} ms`, { cause: err })
        : new ConnectionError(`${what}: ${detail}`, { cause: err });
      return { ok: false, error };
    } finally {
      done();
    }
  }

  private headers(req: HttpRequest, opts: RequestOptions, idempotencyKey: string | undefined): Record<string, string> {
    return {
      Authorization: `Bearer ${this.config.apiKey}`,
      Accept: req.accept ?? 'application/json',
      ...(this.config.userAgent ? { 'User-Agent': this.config.userAgent } : {}),
      ...(req.body !== undefined && !req.form ? { 'Content-Type': 'application/json' } : {}),
      ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}),
      ...opts.headers,
    };
  }
}

/**
 * When to retry and how long to wait: pure functions, so the policy is tested without a
 * network. Only failures that a later identical request can cure are retried: transport
 * errors, 408/425/429/5xx (not 501), and 409 `idempotency_in_progress` (the first request
 * with that key is still running; the server asks us to come back). Validation, auth,
 * idempotency conflicts and other 4xx fail the same way every time, so they are not.
 */

export interface RetryPolicy {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** Ceiling of the first retry's delay; doubles per retry. */
  initialDelayMs: number;
  /** Ceiling of any computed delay. */
  maxDelayMs: number;
  /** No delay is shorter than this (guards against a hot loop when jitter draws near 0). */
  minDelayMs: number;
  /**
   * The longest Retry-After the client will sleep through. A longer one (a daily
   * fair-use limit says hours) is returned to the caller as the error instead of
   * blocking the call that long.
   */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 3,
  initialDelayMs: 500,
  maxDelayMs: 8_000,
  minDelayMs: 250,
  maxRetryAfterMs: 60_000,
};

const RETRYABLE_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

/** True when the same request, sent again later, may succeed. */
export function isRetryableStatus(status: number, code?: string | null): boolean {
  if (RETRYABLE_STATUSES.has(status)) return true;
  return status === 409 && code === 'idempotency_in_progress';
}

/**
 * Exponential backoff with jitter between half and full delay (so many clients that
 * failed together do not retry together), floored at `minDelayMs`. `retry` is 1 for the
 * first retry.
 */
export function backoffDelayMs(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.initialDelayMs * 2 ** Math.max(0, retry - 1), policy.maxDelayMs);
  const jittered = ceiling * (0.5 + 0.5 * random());
  return Math.max(policy.minDelayMs, Math.round(jittered));
}

/**
 * Parses Retry-After: delta-seconds or an HTTP date (RFC 9110 §10.2.3). Returns
 * milliseconds to wait (0 for a date in the past), or undefined when absent or invalid.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  if (!/[a-z]/i.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/**
 * The wait before retry number `retry`, or null when the client should give up: retries
 * are used up, or the server asks for a longer wait than `maxRetryAfterMs`. A Retry-After
 * within bounds is honoured as a minimum (the jittered delay still applies if longer).
 */
export function retryDelayMs(retry: number, retryAfterMs: number | undefined, policy: RetryPolicy, random: () => number = Math.random): number | null {
  if (retry > policy.maxRetries) return null;
  if (retryAfterMs !== undefined && retryAfterMs > policy.maxRetryAfterMs) return null;
  return Math.max(backoffDelayMs(retry, policy, random), retryAfterMs ?? 0);
}

/** Sleeps `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

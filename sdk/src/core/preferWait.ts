/**
 * How long `client.run()` and `hostedInvocations.invoke()` let their creation wait for the
 * work to end (`Prefer: wait`) at most: well within the per-request timeout (60 s unless
 * set), past which the work is followed by reading it.
 */
export const CREATION_WAIT_SECONDS = 20;

/**
 * How long a creation lets its answer wait for the work to end (`Prefer: wait`): at most
 * `capSeconds`, no longer than the caller's own `timeoutMs`, and 10 s inside the
 * per-request timeout, so a waiting answer is never cut off.
 */
export function waitSecondsWithin(capSeconds: number, timeoutMs: number | undefined, requestTimeoutMs: number): number {
  return Math.max(0, Math.min(capSeconds, Math.floor((timeoutMs ?? Infinity) / 1000), Math.floor(requestTimeoutMs / 1000) - 10));
}

/** The request headers that ask for that wait (none for no wait). */
export function preferWaitHeaders(waitSeconds: number | undefined): { headers?: Record<string, string> } {
  return waitSeconds ? { headers: { Prefer: `wait=${Math.ceil(waitSeconds)}` } } : {};
}

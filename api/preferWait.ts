import parsePreferHeader from 'parse-prefer-header';

/** The longest wait a `Prefer: wait` gets: past it, an answer is better sent and the work followed. */
export const PREFER_WAIT_MAX_SECONDS = 60;

/**
 * The seconds a request's `Prefer: wait=N` (RFC 7240) asks for, at most
 * PREFER_WAIT_MAX_SECONDS; undefined when it asks none, or not as a whole number of
 * seconds (a preference the server cannot honour is ignored, as the RFC says).
 */
export function preferredWaitSeconds(header: string | undefined): number | undefined {
  const wait = parsePreferHeader(header).wait;
  if (typeof wait !== 'string' || !/^\d{1,6}$/.test(wait)) return undefined;
  return Math.min(Number(wait), PREFER_WAIT_MAX_SECONDS);
}

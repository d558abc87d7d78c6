/**
 * The service's dependencies and the one rule for telling "a dependency failed or did not
 * answer in time" from every other error, so the api can answer 503 with Retry-After
 * (and a retry can complete the work) instead of a 500.
 */
export type Dependency = 'postgres' | 'temporal' | 'object_store' | 'payment_provider' | 'lab_runtime';

/** A dependency refused, failed or did not answer within its deadline. */
export class DependencyUnavailable extends Error {
  readonly dependency: Dependency;
  constructor(dependency: Dependency, cause?: unknown) {
    super(`${dependency} is unavailable: ${(cause as Error)?.message ?? cause ?? 'no answer'}`, { cause });
    this.dependency = dependency;
    this.name = 'DependencyUnavailable';
  }
}

// Postgres: connection exceptions (class 08), shutdown or startup (57P01-57P03), too many
// connections; pg's own messages for a lost connection or a query past its deadline.
const PG_STATES = /^(08|57P0[123]$|53300$)/;
const PG_MESSAGES = /Connection terminated|Query read timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is closed|connect ECONNREFUSED/;
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * The dependency an error says is unavailable, or null when it is some other error. The
 * object store and Temporal are wrapped at their doors (DependencyUnavailable); what
 * reaches here raw from a query is Postgres's.
 */
export function unavailableDependency(err: unknown): Dependency | null {
  if (err instanceof DependencyUnavailable) return err.dependency;
  const e = err as { name?: string; code?: unknown; message?: string } | null;
  if (!e || typeof e !== 'object') return null;
  if (e.name === 'KnexTimeoutError') return 'postgres';
  if (typeof e.code === 'string' && (PG_STATES.test(e.code) || NETWORK_CODES.has(e.code))) return 'postgres';
  if (PG_MESSAGES.test(e.message ?? '')) return 'postgres';
  return null;
}

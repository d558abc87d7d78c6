import { unavailableDependency } from '../storage/dependencies.ts';
/**
 * Every failure a client sees is an ApiError rendered by the error middleware into the
 * spec's envelope `{error: {type, code, message, param, details, request_id}}`.
 * Errors are made by the factories below, each with a stable code; nothing matches on
 * messages.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly param: string | null;
  readonly details: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(
    status: number,
    code: string,
    message: string,
    param: string | null = null,
    details: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param;
    this.details = details;
    this.headers = headers;
  }
}

const TYPES: Record<number, string> = {
  400: 'validation_error', 401: 'authentication_error', 402: 'insufficient_credits_error',
  403: 'permission_error', 404: 'not_found_error', 405: 'invalid_request_error',
  409: 'conflict_error', 413: 'invalid_request_error', 415: 'invalid_request_error',
  422: 'validation_error', 429: 'rate_limit_error', 500: 'api_error',
  501: 'not_implemented_error', 503: 'service_unavailable_error',
};

/** Error `type` by HTTP status, as docs/contract/gaps.md lists. */
export function errorType(status: number): string {
  return TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

export const errors = {
  validation: (code: string, message: string, param: string | null, details: Record<string, unknown> = {}) =>
    new ApiError(422, code, message, param, details),
  invalidRequest: (message: string, param: string | null = null) => new ApiError(400, 'invalid_request', message, param),
  unauthenticated: (code: string, message: string) =>
    new ApiError(401, code, message, null, {}, { 'WWW-Authenticate': 'Bearer realm="silico"' }),
  insufficientScope: (scope: string) =>
    new ApiError(403, 'insufficient_scope', `This API key lacks the scope ${scope} that this route requires.`, null, { required_scope: scope }),
  gatewayNotEnabled: () =>
    new ApiError(403, 'gateway_not_enabled', 'Managed operations (the agent gateway) are not enabled for this account; reads still work.', null, {
      resolution: 'Ask the account operator to enable managed operations for this account.',
      retryable: false,
    }),
  featureNotEnabled: (flag: string) =>
    new ApiError(403, 'feature_not_enabled', `The feature ${flag} is not enabled for this account.`, null, { feature: flag }),
  notFound: (code: string, what: string, param: string | null) => new ApiError(404, code, `No such ${what}.`, param),
  routeNotFound: (method: string, path: string) => new ApiError(404, 'route_not_found', `No route ${method} ${path}.`),
  methodNotAllowed: (method: string, allowed: string[]) =>
    new ApiError(405, 'method_not_allowed', `${method} is not allowed here; allowed: ${allowed.join(', ')}.`, null, { allowed }, { Allow: allowed.join(', ') }),
  conflict: (code: string, message: string, details: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    new ApiError(409, code, message, null, details, headers),
  payloadTooLarge: (limit: number) =>
    new ApiError(413, 'payload_too_large', `The request body is larger than ${limit} bytes.`, null, { limit_bytes: limit }),
  unsupportedMediaType: (type: string, expected: string) =>
    new ApiError(415, 'unsupported_media_type', `Content-Type ${type || '(none)'} is not accepted here; send ${expected}.`, null, { expected }),
  rateLimited: (retryAfter: number, bucket: string) =>
    new ApiError(429, 'rate_limited', `Rate limit of the ${bucket} bucket reached for this key; retry after ${retryAfter} seconds.`, null, { bucket, retry_after_seconds: retryAfter }, { 'Retry-After': String(retryAfter) }),
  /**
   * The balance cannot cover the maximum of `what` ("this run"), `usd`: nothing was
   * accepted. `note` follows the amount in the message; `details` join the envelope's.
   */
  insufficientCredits: (a: { what: string; usd: number; resolution: string; note?: string; details?: Record<string, unknown> }) =>
    new ApiError(402, 'insufficient_credits', `Available compute cannot cover ${a.what}'s maximum of $${a.usd}${a.note ?? ''}.`, null, {
      required_usd: a.usd, ...a.details, resolution: a.resolution, retryable: false,
    }),
  notImplemented: (tool: string) =>
    new ApiError(501, 'not_implemented', `The operation ${tool} is specified but not available yet on this server.`, null, { tool }),
  serviceUnavailable: (dependency: string) =>
    new ApiError(503, 'service_unavailable', `A dependency (${dependency}) is unavailable; retry shortly.`, null, { dependency, retryable: true }, { 'Retry-After': '5' }),
  internal: (code = 'internal_error', message = 'The service could not complete the request.') => new ApiError(500, code, message),
};

const RESOLUTIONS: Record<number, string> = {
  400: 'Fix the request as the message says and send it again.',
  401: 'Send a valid, unexpired API key as `Authorization: Bearer <key>`.',
  402: 'Add compute to the account or choose a cheaper plan, then prepare again.',
  403: 'Use a key with the required scope, or ask the operator to enable the account.',
  404: 'Check the identifier; records of other accounts are not visible.',
  409: 'Prepare the plan again, or use the exact digest it returned.',
  422: 'Fix the named parameter and send the request again.',
  429: 'Wait for Retry-After seconds, then retry.',
  501: 'This operation is not available on this server yet.',
  503: 'Retry after the Retry-After interval.',
};

/** Managed-lab routes add a resolution, retryability and the gateway request id. */
function managedDetails(err: ApiError, requestId: string): Record<string, unknown> {
  return {
    resolution: RESOLUTIONS[err.status] ?? 'Retry later; if it persists, contact support with the request id.',
    retryable: err.status === 429 || err.status >= 500 && err.status !== 501 || err.code === 'idempotency_in_progress',
    gateway_request_id: requestId,
    ...err.details,
  };
}

/** The spec's error envelope for one error; managed-lab routes get the extra details. */
export function errorBody(err: ApiError, requestId: string, managed: boolean) {
  return {
    error: {
      type: errorType(err.status),
      code: err.code,
      message: err.message,
      param: err.param,
      details: managed ? managedDetails(err, requestId) : err.details,
      request_id: requestId,
    },
  };
}

/**
 * What a thrown error means to a client, when it means something: our own ApiError, or a
 * dependency that is unavailable (503 with Retry-After: retrying the same request,
 * with the same Idempotency-Key, completes it). Undefined for anything unexpected.
 */
export function knownApiError(raw: unknown): ApiError | undefined {
  if (raw instanceof ApiError) return raw;
  const dependency = unavailableDependency(raw);
  return dependency ? errors.serviceUnavailable(dependency) : undefined;
}

/**
 * Every failure the SDK raises is a SilicoError. API answers become an ApiError subclass
 * chosen by status (and code, for the cases a caller handles differently), so callers
 * branch with `instanceof` instead of comparing strings; transport failures are a
 * separate ConnectionError because no API answer exists for them.
 */
import type { Run } from './models.ts';
import type { RunHandle } from './runHandle.ts';
import type { InvocationHandle } from './invocationHandle.ts';
import type { Experiment, ExperimentPlan } from './models.ts';
import type { StudyHandle } from './studyHandle.ts';

/** The base of every error the SDK throws. */
export class SilicoError extends Error {
  override name = 'SilicoError';
}

/** The error envelope's fields, as the API sends them. */
export interface ApiErrorBody {
  type: string;
  code: string;
  message: string;
  param: string | null;
  details: Record<string, unknown>;
  request_id: string | null;
}

/** An error answer of the API (any non-2xx status). */
export class ApiError extends SilicoError {
  override name = 'ApiError';
  /** HTTP status. */
  readonly status: number;
  /** Broad class, e.g. `validation_error`. */
  readonly type: string;
  /** Stable machine code, e.g. `unknown_inputs`. */
  readonly code: string;
  /** The offending field, when one is named. */
  readonly param: string | null;
  readonly details: Record<string, unknown>;
  /** Keep it for support: the server logs everything under it. */
  readonly requestId: string | null;
  readonly headers: Headers;
  /** The parsed body (or its text when it was not JSON). */
  readonly raw: unknown;

  constructor(status: number, body: ApiErrorBody, headers: Headers, raw: unknown) {
    super(body.message);
    this.status = status;
    this.type = body.type;
    this.code = body.code;
    this.param = body.param;
    this.details = body.details;
    this.requestId = body.request_id;
    this.headers = headers;
    this.raw = raw;
  }

  /** Alias of `status` (stripe-node's name for it). */
  get statusCode(): number {
    return this.status;
  }
}

/** 400 or 422: the request is wrong as sent; retrying it unchanged fails again. */
export class ValidationError extends ApiError {
  override name = 'ValidationError';
}
/** 401: missing, invalid, expired or revoked API key. */
export class AuthenticationError extends ApiError {
  override name = 'AuthenticationError';
}
/** 402: the account's available compute cannot cover the run's reservation. */
export class InsufficientCreditsError extends ApiError {
  override name = 'InsufficientCreditsError';
}
/** 403: the key lacks the scope (`insufficient_scope`) or the gateway is off (`gateway_not_enabled`). */
export class PermissionError extends ApiError {
  override name = 'PermissionError';
}
/** 404: no such record for this account (another account's records look the same). */
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
}
/** 409: a plan or idempotency conflict. */
export class ConflictError extends ApiError {
  override name = 'ConflictError';
}
/** 409 `idempotency_conflict`: the key was used with a different request; never retried. */
export class IdempotencyConflictError extends ConflictError {
  override name = 'IdempotencyConflictError';
}
/** 429: a rate or daily fair-use limit; `retryAfterSeconds` says how long to wait. */
export class RateLimitError extends ApiError {
  override name = 'RateLimitError';
  get retryAfterSeconds(): number | null {
    const header = this.headers.get('retry-after');
    if (header !== null && /^\d+$/.test(header.trim())) return Number(header.trim());
    const detail = this.details.retry_after_seconds;
    return typeof detail === 'number' ? detail : null;
  }
}
/** 501: the operation is in the contract but not built on this server yet. */
export class NotImplementedError extends ApiError {
  override name = 'NotImplementedError';
}
/** 5xx other than 501: the service could not complete the request. */
export class ServerError extends ApiError {
  override name = 'ServerError';
}

/** The request never got an HTTP answer (DNS, refused, reset, timeout). */
export class ConnectionError extends SilicoError {
  override name = 'ConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
/** No answer within the client's `timeoutMs`. */
export class ConnectionTimeoutError extends ConnectionError {
  override name = 'ConnectionTimeoutError';
}

/**
 * The server (or a proxy in front of it) does not serve an event stream: a 404, 406 or
 * 501 to the stream request, another content type, or no headers or no first byte
 * within the request timeout (a buffering proxy). Run waiting and following catch it
 * and poll instead.
 */
export class EventStreamUnavailableError extends SilicoError {
  override name = 'EventStreamUnavailableError';
}

/** Downloaded bytes do not hash (or measure) to the recorded identity; nothing was kept. */
export class IntegrityError extends SilicoError {
  override name = 'IntegrityError';
  readonly resource: string;
  readonly expectedSha256: string;
  readonly actualSha256: string;
  readonly expectedSize: number | null;
  readonly actualSize: number;
  constructor(
    resource: string,
    expectedSha256: string,
    actualSha256: string,
    expectedSize: number | null,
    actualSize: number,
  ) {
    super(`${resource}: downloaded bytes hash to ${actualSha256} (${actualSize} bytes), expected ${expectedSha256}` +
      `${expectedSize === null ? '' : ` (${expectedSize} bytes)`}; the partial file was deleted`);
    this.resource = resource;
    this.expectedSha256 = expectedSha256;
    this.actualSha256 = actualSha256;
    this.expectedSize = expectedSize;
    this.actualSize = actualSize;
  }
}

/** A waited-for run ended failed, cancelled or timed out. */
export class RunFailed extends SilicoError {
  override name = 'RunFailed';
  readonly run: Run;
  readonly handle: RunHandle;
  constructor(run: Run, handle: RunHandle) {
    super(`run ${run.id} ended ${run.status}${run.error ? `: ${run.error.code}: ${run.error.message}` : ''}`);
    this.run = run;
    this.handle = handle;
  }
  get status(): Run['status'] {
    return this.run.status;
  }
}

/** A hosted invocation that did not complete (or whose plan could not be executed). */
export class InvocationFailed extends SilicoError {
  override name = 'InvocationFailed';
  readonly invocation: { invocation_id: string; status: string; error: { code: string; message: string } | null } | null;
  constructor(invocation: { invocation_id: string; status: string; error: { code: string; message: string } | null } | null, message?: string) {
    super(message ?? `invocation ${invocation!.invocation_id} ended ${invocation!.status}${invocation!.error ? `: ${invocation!.error.code}: ${invocation!.error.message}` : ''}`);
    this.invocation = invocation;
  }
}

/** An invocation that had not ended when its wait gave up; it goes on (wait on `handle` again). */
export class InvocationTimeout extends SilicoError {
  override name = 'InvocationTimeout';
  readonly handle: InvocationHandle;
  readonly invocation: { status: string } | undefined;
  readonly timeoutMs: number;
  constructor(handle: InvocationHandle, invocation: { status: string } | undefined, timeoutMs: number) {
    super(`invocation ${handle.id} was still ${invocation?.status ?? 'unknown'} after ${timeoutMs} ms; it goes on (wait on error.handle to continue)`);
    this.handle = handle;
    this.invocation = invocation;
    this.timeoutMs = timeoutMs;
  }
}

/** A hosting that ended somewhere other than where the caller waited for it (retired, failed, rejected), or whose plan could not be executed. */
export class HostingEnded extends SilicoError {
  override name = 'HostingEnded';
  readonly hosting: { lab_id: string; status: string; checks?: Array<{ check: string; status: string; detail: string }> } | null;
  constructor(hosting: { lab_id: string; status: string; checks?: Array<{ check: string; status: string; detail: string }> } | null, message?: string) {
    super(message ?? `hosting of ${hosting!.lab_id} ended ${hosting!.status}${hosting!.checks?.some((c) => c.status === 'failed') ? `: ${hosting!.checks.filter((c) => c.status === 'failed').map((c) => `${c.check}: ${c.detail}`).join('; ')}` : ''}`);
    this.hosting = hosting;
  }
}

/** The caller's wait timed out; the run goes on, and `handle` can wait for it again. */
export class RunTimeout extends SilicoError {
  override name = 'RunTimeout';
  readonly handle: RunHandle;
  readonly run: Run | undefined;
  readonly timeoutMs: number;
  constructor(handle: RunHandle, run: Run | undefined, timeoutMs: number) {
    super(`run ${handle.id} was still ${run?.status ?? 'unknown'} after ${timeoutMs} ms; it keeps running (wait on error.handle to continue)`);
    this.handle = handle;
    this.run = run;
    this.timeoutMs = timeoutMs;
  }
}

/** `experiments.run()` opened no study: its plan was blocked, or the confirmation declined it. */
export class StudyNotStarted extends SilicoError {
  override name = 'StudyNotStarted';
  readonly plan: ExperimentPlan;
  readonly reason: 'blocked' | 'declined';
  constructor(plan: ExperimentPlan, reason: 'blocked' | 'declined') {
    super(reason === 'blocked'
      ? `the study plan ${plan.plan_id} is blocked: ${plan.findings.filter((f) => f.severity === 'blocking').map((f) => f.code).join(', ') || 'see its findings'}; nothing was started`
      : `the study plan ${plan.plan_id} was not confirmed; nothing was started`);
    this.plan = plan;
    this.reason = reason;
  }
}

/** The caller's wait for a study timed out; its runs go on, and `handle` can wait again. */
export class StudyTimeout extends SilicoError {
  override name = 'StudyTimeout';
  readonly handle: StudyHandle;
  readonly experiment: Experiment | undefined;
  readonly timeoutMs: number;
  constructor(handle: StudyHandle, experiment: Experiment | undefined, timeoutMs: number) {
    const t = experiment?.run_totals;
    super(`study ${handle.id} was still ${experiment?.status ?? 'unknown'}${t ? ` (${t.total - t.queued - t.running - t.cancelling} of ${t.total} runs ended)` : ''} after ${timeoutMs} ms; its runs go on (wait on error.handle to continue)`);
    this.handle = handle;
    this.experiment = experiment;
    this.timeoutMs = timeoutMs;
  }
}

const BY_STATUS: Record<number, typeof ApiError> = {
  400: ValidationError, 401: AuthenticationError, 402: InsufficientCreditsError, 403: PermissionError,
  404: NotFoundError, 409: ConflictError, 422: ValidationError, 429: RateLimitError, 501: NotImplementedError,
};

/** The error class of an answer: by code where it matters to the caller, else by status. */
export function errorClassFor(status: number, code: string): typeof ApiError {
  if (status === 409 && code === 'idempotency_conflict') return IdempotencyConflictError;
  return BY_STATUS[status] ?? (status >= 500 ? ServerError : ApiError);
}

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'validation_error', 401: 'authentication_error', 402: 'insufficient_credits_error', 403: 'permission_error',
  404: 'not_found_error', 409: 'conflict_error', 422: 'validation_error', 429: 'rate_limit_error', 501: 'not_implemented_error',
};

/**
 * Builds the ApiError of a non-2xx answer. Bodies that are not the error envelope (a
 * proxy's HTML page, an empty 502) still give a typed error with the status and a
 * snippet, so callers never have to parse anything themselves.
 */
export function errorFromResponse(status: number, headers: Headers, text: string): ApiError {
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : text;
  } catch {
    // not JSON: keep the text
  }
  const e = (parsed as { error?: Partial<ApiErrorBody> } | null)?.error;
  const requestId = headers.get('x-request-id') ?? headers.get('request-id');
  const body: ApiErrorBody = e && typeof e === 'object'
    ? {
      type: String(e.type ?? TYPE_BY_STATUS[status] ?? 'api_error'),
      code: String(e.code ?? `http_${status}`),
      message: String(e.message ?? `HTTP ${status}`),
      param: typeof e.param === 'string' ? e.param : null,
      details: e.details && typeof e.details === 'object' ? e.details : {},
      request_id: typeof e.request_id === 'string' ? e.request_id : requestId,
    }
    : {
      type: TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'),
      code: `http_${status}`,
      message: `HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`,
      param: null,
      details: {},
      request_id: requestId,
    };
  const Cls = errorClassFor(status, body.code);
  return new Cls(status, body, headers, parsed);
}

import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How one HTTP attempt ended, as the soak counts it: a success; a 4xx by its error code;
 * the service's 503 with Retry-After (a dependency or every replica out); a request cut
 * (the connection closed before an answer: a killed replica, or an upload answered
 * before its body was sent, which the balancer cuts); no answer within the
 * client's deadline; or anything else (a 5xx other than 503 with Retry-After), which fails
 * the soak.
 */
export type Outcome = '2xx' | `4xx ${string}` | '503 retry-after' | 'cut' | 'no answer' | `other ${number}`;

export interface Attempt {
  /** The flow's operation (`run_create`, `file_download`, ...). */
  op: string;
  at: number;
  ms: number;
  outcome: Outcome;
}

export interface Answer { status: number; body: any; headers: Headers; bytes?: Buffer }

/** A retry waits what Retry-After says, or this long when nothing says (a cut, a 409 in progress without it). */
const FALLBACK_WAIT_MS = 500;
/** A client's deadline for one attempt; the service answers 503 within its own 10 s dependency deadline. */
const ATTEMPT_TIMEOUT_MS = 30_000;
/** How long one logical request keeps retrying before the soak counts it lost. */
const GIVE_UP_MS = 5 * 60_000;

/** Every attempt of every request, in the order they ended. */
export class Recorder {
  readonly attempts: Attempt[] = [];
  /** Logical requests that never got a final answer (given up): each a loss. */
  readonly abandoned: Array<{ op: string; last: Outcome }> = [];
  record(a: Attempt): void {
    this.attempts.push(a);
  }
}

function outcomeOf(status: number, body: any, headers: Headers): Outcome {
  if (status >= 200 && status < 300) return '2xx';
  if (status === 503 && headers.get('retry-after')) return '503 retry-after';
  if (status >= 400 && status < 500) return `4xx ${status} ${body?.error?.code ?? 'no_envelope'}`;
  return `other ${status}`;
}

/** Whether an answer asks to be tried again: the service's 503 or 429, or a key still held by a request a killed replica never finished. */
function retryable(a: Answer): boolean {
  if (a.status === 503 || a.status === 429) return true;
  return a.status === 409 && a.body?.error?.code === 'idempotency_in_progress';
}

/**
 * The soak's client: retries as the SDK does (a cut, a 503 or 429, an idempotency key
 * still in progress; waiting Retry-After), a write keeping its Idempotency-Key across
 * attempts, and records every attempt.
 */
export class SoakClient {
  private readonly base: string;
  private readonly recorder: Recorder;
  constructor(base: string, recorder: Recorder) {
    this.base = base;
    this.recorder = recorder;
  }

  async request(op: string, method: string, route: string, o: {
    key: string; body?: unknown; form?: () => FormData; idempotencyKey?: string; bytes?: boolean;
    /** Bytes sent as they are, with headers of their own made per attempt (a signed provider event). */
    raw?: () => { body: string; headers: Record<string, string> };
  } = { key: '' }): Promise<Answer | null> {
    const headers: Record<string, string> = o.key ? { Authorization: `Bearer ${o.key}` } : {};
    if (o.idempotencyKey) headers['Idempotency-Key'] = o.idempotencyKey;
    if (o.body !== undefined) headers['Content-Type'] = 'application/json';
    const giveUp = Date.now() + GIVE_UP_MS;
    let last: Outcome = 'no answer';
    while (Date.now() < giveUp) {
      const at = Date.now();
      let answer: Answer | undefined;
      let wait = FALLBACK_WAIT_MS;
      try {
        const raw = o.raw?.();
        const res = await fetch(`${this.base}${route}`, {
          method, headers: { ...headers, ...raw?.headers }, signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
          body: raw ? raw.body : o.form ? o.form() : o.body === undefined ? undefined : JSON.stringify(o.body),
        });
        const buf = Buffer.from(await res.arrayBuffer());
        let body: any;
        if ((res.headers.get('content-type') ?? '').includes('json')) {
          try {
            body = JSON.parse(buf.toString('utf8'));
          } catch {
            body = undefined;
          }
        }
        answer = { status: res.status, body, headers: res.headers, ...(o.bytes ? { bytes: buf } : {}) };
        last = outcomeOf(res.status, body, res.headers);
        const retryAfter = Number(res.headers.get('retry-after'));
        if (retryAfter > 0) wait = retryAfter * 1000;
      } catch (err) {
        last = (err as Error).name === 'TimeoutError' ? 'no answer' : 'cut';
      }
      this.recorder.record({ op, at, ms: Date.now() - at, outcome: last });
      if (answer && !retryable(answer)) return answer;
      await sleep(wait);
    }
    this.recorder.abandoned.push({ op, last });
    return null;
  }
}

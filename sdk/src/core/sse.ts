/**
 * Server-sent events over the shared HttpClient. Connecting is an ordinary `stream()`
 * call (auth, base URL, retries of the connect, error envelopes → ApiError), but nothing
 * is retried once the answer has begun: only the caller knows the last event id it saw,
 * so a stream that drops simply ends and the caller reconnects with Last-Event-ID.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { ApiError, ConnectionTimeoutError, EventStreamUnavailableError } from '../errors.ts';
import type { HttpClient, HttpRequest, RequestOptions } from './http.ts';

/**
 * Statuses a server or proxy gives when it routes or negotiates no event stream here;
 * the caller falls back to plain requests, which report a real error (an unknown run)
 * the same way.
 */
const NOT_STREAMED = new Set([404, 406, 501]);

/**
 * Whether a failed connect means "no stream here" rather than a failure to report. Our
 * server sends headers at once, so no headers within the timeout (after the retries) is
 * a proxy holding the whole answer until the stream ends; plain requests work through it.
 */
function notStreamed(err: unknown): boolean {
  return (err instanceof ApiError && NOT_STREAMED.has(err.status)) || err instanceof ConnectionTimeoutError;
}

/**
 * Opens `req` as an event stream and yields its messages until the stream ends. A
 * connection lost mid-way, or silent for longer than the request timeout (servers send
 * keep-alive comments while idle, so silence means a dead connection), ends it as a
 * close would. Throws EventStreamUnavailableError when the answer is not
 * `text/event-stream`, or when not one byte of it arrives within that timeout (a proxy
 * buffering the stream would otherwise hold every event back until the run ends); the
 * caller's signal aborts it with its reason.
 */
export async function* openEventStream(http: HttpClient, req: HttpRequest, opts: RequestOptions = {}): AsyncGenerator<EventSourceMessage, void, undefined> {
  // One controller per connection, linked to the caller's signal only while it is open:
  // a follower reconnects many times with the same signal and must not pile listeners on it.
  const connection = new AbortController();
  const forward = () => connection.abort(opts.signal!.reason);
  opts.signal?.addEventListener('abort', forward, { once: true });
  if (opts.signal?.aborted) forward();
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  try {
    const res = await connect(http, req, { ...opts, signal: connection.signal });
    reader = res.body!.getReader();
    const messages: EventSourceMessage[] = [];
    const parser = createParser({ onEvent: (m) => messages.push(m) });
    const decoder = new TextDecoder();
    const idleMs = opts.timeoutMs ?? http.config.timeoutMs;
    for (let received = false; ; received = true) {
      const chunk = await nextChunk(reader, idleMs, connection.signal);
      if (chunk === 'silent' && !received) {
        throw new EventStreamUnavailableError(`${req.method} ${req.path}: not one byte of the stream within ${idleMs} ms (a buffering proxy?)`);
      }
      if (typeof chunk === 'string') return;
      parser.feed(decoder.decode(chunk, { stream: true }));
      yield* messages.splice(0);
    }
  } finally {
    opts.signal?.removeEventListener('abort', forward);
    // Releases the connection when the consumer stops early, the stream went silent, or
    // the caller aborted (cancelling the body too, in case a custom fetch ignores the abort).
    connection.abort();
    void reader?.cancel().catch(() => undefined);
  }
}

async function connect(http: HttpClient, req: HttpRequest, opts: RequestOptions): Promise<Response> {
  let res: Response;
  try {
    res = await http.stream({ ...req, accept: 'text/event-stream' }, opts);
  } catch (err) {
    if (notStreamed(err)) throw new EventStreamUnavailableError(`${req.method} ${req.path}: no event stream (${(err as Error).message})`, { cause: err });
    throw err;
  }
  const type = res.headers.get('content-type') ?? '';
  if (!/^text\/event-stream\b/i.test(type) || !res.body) {
    void res.body?.cancel().catch(() => undefined);
    throw new EventStreamUnavailableError(`${req.method} ${req.path}: answered ${type || 'without a content type'}, not text/event-stream`);
  }
  return res;
}

/**
 * The next chunk; 'ended' when the body ended or failed, 'silent' when nothing came for
 * `idleMs`. The abort is raced here rather than left to fetch, so a caller-supplied
 * fetch whose bodies ignore the signal still stops at once.
 */
function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>, idleMs: number, signal: AbortSignal): Promise<Uint8Array | 'ended' | 'silent'> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const settle = (finish: () => void) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      finish();
    };
    const onAbort = () => settle(() => reject(signal.reason));
    const timer = setTimeout(() => settle(() => resolve('silent')), idleMs);
    signal.addEventListener('abort', onAbort, { once: true });
    reader.read().then(
      (read) => settle(() => resolve(read.done ? 'ended' : read.value)),
      // A lost connection: to the caller, the same as a close.
      () => settle(() => (signal.aborted ? reject(signal.reason) : resolve('ended'))),
    );
  });
}

/**
 * A RunHandle is a run's id plus the calls that act on it. Waiting and following are
 * push-based: they read the run's server-sent event stream (reconnecting from the last
 * event seen if it drops) and poll only where no stream is served. Between calls it
 * holds no connection and no state beyond the last record it saw, so it is safe to keep
 * (e.g. from a RunTimeout) and use again later: `wait()` simply starts waiting again.
 */
import type { RequestOptions } from './core/http.ts';
import { sleep } from './core/retry.ts';
import { EventStreamUnavailableError, RunFailed, RunTimeout } from './errors.ts';
import { isTerminalStatus, type Run, type RunArtifact, type RunEvent, type RunResults } from './models.ts';
import type { WithEnvelope } from './types.ts';
import type { DownloadedArtifact, Runs } from './resources/runs.ts';

export interface WaitOptions {
  /** Give up (RunTimeout) after this long; the run itself continues. Default: no limit. */
  timeoutMs?: number;
  /** Between status reads, where the server serves no event stream. Default 1000. */
  pollIntervalMs?: number;
  signal?: AbortSignal;
}

export interface EventsOptions {
  /** Keep reading until the run's terminal event (default false: what exists now). */
  follow?: boolean;
  /** Start after this sequence number (default 0: from the first event). */
  after?: number;
  /** Between reads while following and nothing is new, where the server serves no event stream. Default 1000. */
  pollIntervalMs?: number;
  /** Events per JSON page (server maximum 1000); not used by the stream. Default 100. */
  pageSize?: number;
  signal?: AbortSignal;
}

/** Polls with nothing new before re-reading the run itself, in case its terminal event is missed. */
const IDLE_POLLS_BEFORE_STATUS_CHECK = 5;

/** setTimeout's ceiling (about 24.8 days): a wait with a later deadline polls once that much has passed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

function isTerminalEvent(e: RunEvent): boolean {
  return e.type === 'state_changed' && typeof e.data.status === 'string' && isTerminalStatus(e.data.status);
}

/** File names come from the lab (untrusted): keep the last path segment only, never `..`. */
function safeFileName(a: RunArtifact, taken: Set<string>): string {
  const base = a.file_name.replaceAll('\\', '/').split('/').pop() ?? '';
  let name = base && base !== '.' && base !== '..' ? base : a.artifact_id;
  if (taken.has(name)) name = `${a.artifact_id}-${name}`;
  taken.add(name);
  return name;
}

export class RunHandle {
  /** The last run record this handle read (or was created with). */
  lastSeen: Run | undefined;

  private readonly runs: Runs;
  readonly id: string;
  constructor(runs: Runs, id: string, lastSeen?: Run) {
    this.runs = runs;
    this.id = id;
    this.lastSeen = lastSeen;
  }

  /** Reads the run now. */
  async get(opts?: RequestOptions): Promise<WithEnvelope<Run>> {
    const run = await this.runs.get(this.id, opts);
    this.lastSeen = run;
    return run;
  }

  /**
   * Waits until the run is terminal. Resolves with the completed run; throws RunFailed
   * (failed, cancelled, timed_out) or, when `timeoutMs` passes first, RunTimeout carrying
   * this handle. The status is always read at least once, even with `timeoutMs: 0`: a
   * finished run returns at once. Otherwise it follows the event stream to the terminal
   * event and reads the run once more; where no stream is served it polls the run every
   * `pollIntervalMs`.
   */
  async wait(options: WaitOptions = {}): Promise<WithEnvelope<Run>> {
    const interval = options.pollIntervalMs ?? 1000;
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    let follow = true;
    for (;;) {
      const run = await this.get({ signal: options.signal });
      if (run.status === 'completed') return run;
      if (isTerminalStatus(run.status)) throw new RunFailed(run, this);
      const left = deadline - Date.now();
      if (left <= 0) throw new RunTimeout(this, run, options.timeoutMs ?? 0);
      if (follow) {
        // Once per wait: if the stream ended but the run still reads live, polling (not
        // a fresh stream replaying every event) settles the disagreement.
        follow = false;
        if (await this.followUntilEnd(left, options.signal)) continue;
      }
      await sleep(Math.min(interval, left), options.signal);
    }
  }

  /**
   * Follows the event stream until the terminal event or until `ms` passes, whichever
   * is first; false when no event stream is served (the caller polls instead).
   */
  private async followUntilEnd(ms: number, signal?: AbortSignal): Promise<boolean> {
    const deadline = Number.isFinite(ms) ? AbortSignal.timeout(Math.min(ms, MAX_TIMER_MS)) : undefined;
    const both = [deadline, signal].filter((s): s is AbortSignal => s !== undefined);
    try {
      for await (const e of this.followStream(0, both.length ? AbortSignal.any(both) : undefined)) {
        if (isTerminalEvent(e)) break;
      }
      return true;
    } catch (err) {
      if (err instanceof EventStreamUnavailableError) return false;
      if (deadline?.aborted && !signal?.aborted) return true; // wait() reads the run once and decides
      throw err;
    }
  }

  /** Requests cancellation; the run passes through `cancelling` to `cancelled`. */
  async cancel(opts?: RequestOptions): Promise<WithEnvelope<Run>> {
    const run = await this.runs.cancel(this.id, opts);
    this.lastSeen = run;
    return run;
  }

  results(opts?: RequestOptions): Promise<WithEnvelope<RunResults>> {
    return this.runs.results(this.id, opts);
  }

  /**
   * The run's events in order. Without `follow` it reads the JSON pages and ends after
   * the events that exist now; with `follow` it reads the live event stream (resuming
   * after the last event if the connection drops) until the terminal `state_changed`
   * event, and whatever the server sent with it, has been yielded. Where no stream is
   * served, following polls the pages every `pollIntervalMs`. Resume later with
   * `after: lastSeq`.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    let after = options.after ?? 0;
    if (options.follow) {
      try {
        for await (const e of this.followStream(after, options.signal)) {
          yield e;
          after = e.seq;
        }
        return;
      } catch (err) {
        if (!(err instanceof EventStreamUnavailableError)) throw err;
      }
    }
    yield* this.pollEvents(after, options);
  }

  /**
   * The event stream across reconnections. After a drop it resumes with Last-Event-ID =
   * the last seq yielded (so nothing repeats), waiting the client's capped backoff, reset
   * by every new event. Ends with the stream that carried the terminal event; or, when a
   * drop finds the run already ended (its terminal event never came), after one last
   * read of the pages. Throws EventStreamUnavailableError where no stream is served.
   */
  private async *followStream(after: number, signal?: AbortSignal): AsyncGenerator<RunEvent, void, undefined> {
    for (let drops = 0; ; drops++) {
      let ended = false;
      for await (const e of this.runs.streamEvents(this.id, after, { signal })) {
        if (e.seq <= after) continue;
        yield e;
        after = e.seq;
        drops = 0;
        if (isTerminalEvent(e)) ended = true;
      }
      if (ended) return;
      if (isTerminalStatus((await this.get({ signal })).status)) {
        yield* this.pollEvents(after, { signal });
        return;
      }
      await sleep(this.runs.reconnectDelayMs(drops + 1), signal);
    }
  }

  /** The JSON pages after `after`; with `follow`, polls until the run's end (see events()). */
  private async *pollEvents(after: number, options: EventsOptions): AsyncGenerator<RunEvent, void, undefined> {
    const interval = options.pollIntervalMs ?? 1000;
    let ended = false;
    let idle = 0;
    let draining = false;
    for (;;) {
      const page = await this.runs.listEvents(this.id, { after, limit: options.pageSize ?? 100 }, { signal: options.signal });
      for (const e of page.items) {
        yield e;
        after = e.seq;
        if (isTerminalEvent(e)) ended = true;
      }
      if (page.has_more) continue;
      if (!options.follow || ended || draining) return;
      if (page.items.length) {
        idle = 0;
      } else if (++idle % IDLE_POLLS_BEFORE_STATUS_CHECK === 0 && isTerminalStatus((await this.get({ signal: options.signal })).status)) {
        draining = true; // one more read picks up whatever was written before the end
        continue;
      }
      await sleep(interval, options.signal);
    }
  }

  /**
   * Downloads every public artifact into `dir` (created if missing), each verified
   * against its recorded sha256 while streaming. Names are the artifacts' file names,
   * reduced to a plain file name; `roles` keeps only those output ports; `direct` takes
   * the bytes straight from the object store where the deployment offers it.
   */
  async downloadArtifacts(dir: string, options: { roles?: string[]; signal?: AbortSignal; direct?: boolean } = {}): Promise<DownloadedArtifact[]> {
    const results = await this.runs.results(this.id, { signal: options.signal, direct: options.direct });
    // Loaded on use: the SDK's other calls run in browsers too (the console), where there is no file system.
    const [{ mkdir }, path] = await Promise.all([import('node:fs/promises'), import('node:path')]);
    await mkdir(dir, { recursive: true });
    const taken = new Set<string>();
    const out: DownloadedArtifact[] = [];
    for (const artifact of results.artifacts) {
      if (options.roles && !options.roles.includes(artifact.role)) continue;
      const file = await this.runs.downloadArtifact(this.id, artifact, path.join(dir, safeFileName(artifact, taken)), { signal: options.signal, direct: options.direct });
      out.push({ ...file, artifact });
    }
    return out;
  }
}

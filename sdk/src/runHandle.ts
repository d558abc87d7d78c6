/**
 * A RunHandle is a run's id plus the calls that act on it. It holds no connection and
 * no state beyond the last record it saw, so it is safe to keep (e.g. from a RunTimeout)
 * and use again later: `wait()` simply resumes polling.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { RequestOptions } from './core/http.ts';
import { sleep } from './core/retry.ts';
import { RunFailed, RunTimeout } from './errors.ts';
import { isTerminalStatus, type Run, type RunArtifact, type RunEvent, type RunResults } from './models.ts';
import type { WithEnvelope } from './types.ts';
import type { DownloadedArtifact, Runs } from './resources/runs.ts';

export interface WaitOptions {
  /** Give up (RunTimeout) after this long; the run itself continues. Default: no limit. */
  timeoutMs?: number;
  /** Between status reads. Default 1000. */
  pollIntervalMs?: number;
  signal?: AbortSignal;
}

export interface EventsOptions {
  /** Keep reading until the run's terminal event (default false: what exists now). */
  follow?: boolean;
  /** Start after this sequence number (default 0: from the first event). */
  after?: number;
  /** Between reads while following and nothing is new. Default 1000. */
  pollIntervalMs?: number;
  /** Events per request (server maximum 1000). Default 100. */
  pageSize?: number;
  signal?: AbortSignal;
}

/** Polls with nothing new before re-reading the run itself, in case its terminal event is missed. */
const IDLE_POLLS_BEFORE_STATUS_CHECK = 5;

function isTerminalEvent(e: RunEvent): boolean {
  return e.type === 'state_changed' && typeof e.data.status === 'string' && isTerminalStatus(e.data.status);
}

/** File names come from the lab (untrusted): keep the last path segment only, never `..`. */
function safeFileName(a: RunArtifact, taken: Set<string>): string {
  const base = path.basename(a.file_name.replaceAll('\\', '/'));
  let name = base && base !== '.' && base !== '..' ? base : a.artifact_id;
  if (taken.has(name)) name = `${a.artifact_id}-${name}`;
  taken.add(name);
  return name;
}

export class RunHandle {
  /** The last run record this handle read (or was created with). */
  lastSeen: Run | undefined;

  constructor(private readonly runs: Runs, readonly id: string, lastSeen?: Run) {
    this.lastSeen = lastSeen;
  }

  /** Reads the run now. */
  async get(opts?: RequestOptions): Promise<WithEnvelope<Run>> {
    const run = await this.runs.get(this.id, opts);
    this.lastSeen = run;
    return run;
  }

  /**
   * Polls until the run is terminal. Resolves with the completed run; throws RunFailed
   * (failed, cancelled, timed_out) or, when `timeoutMs` passes first, RunTimeout carrying
   * this handle. The status is always read at least once, even with `timeoutMs: 0`.
   */
  async wait(options: WaitOptions = {}): Promise<WithEnvelope<Run>> {
    const interval = options.pollIntervalMs ?? 1000;
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    for (;;) {
      const run = await this.get({ signal: options.signal });
      if (run.status === 'completed') return run;
      if (isTerminalStatus(run.status)) throw new RunFailed(run, this);
      const left = deadline - Date.now();
      if (left <= 0) throw new RunTimeout(this, run, options.timeoutMs ?? 0);
      await sleep(Math.min(interval, left), options.signal);
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
   * The run's events in order. Without `follow` it ends after the events that exist
   * now; with `follow` it keeps polling until the terminal `state_changed` event (and
   * the rest of that page) has been yielded. Resume later with `after: lastSeq`.
   */
  async *events(options: EventsOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    const interval = options.pollIntervalMs ?? 1000;
    let after = options.after ?? 0;
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
   * reduced to a plain file name; `roles` keeps only those output ports.
   */
  async downloadArtifacts(dir: string, options: { roles?: string[]; signal?: AbortSignal } = {}): Promise<DownloadedArtifact[]> {
    const results = await this.results({ signal: options.signal });
    await mkdir(dir, { recursive: true });
    const taken = new Set<string>();
    const out: DownloadedArtifact[] = [];
    for (const artifact of results.artifacts) {
      if (options.roles && !options.roles.includes(artifact.role)) continue;
      const file = await this.runs.downloadArtifact(this.id, artifact, path.join(dir, safeFileName(artifact, taken)), { signal: options.signal });
      out.push({ ...file, artifact });
    }
    return out;
  }
}

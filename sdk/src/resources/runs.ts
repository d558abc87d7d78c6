/**
 * Runs: prepare (POST /run-plans), create, read, list, cancel, events (pages or the
 * live stream), results and artifacts, plus the handle-based helpers (start, wait,
 * verified downloads).
 */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { backoffDelayMs } from '../core/retry.ts';
import { openEventStream } from '../core/sse.ts';
import { preferWaitHeaders } from '../core/preferWait.ts';
import { SilicoError } from '../errors.ts';
import { path } from '../core/url.ts';
import type { VerifiedFile } from '../core/download.ts';
import { readVerified, type VerifiedBytes } from '../core/verifiedBytes.ts';
import type { CursorPageBody, Run, RunArtifact, RunArtifactMetadata, RunEvent, RunEventPage, RunPlan, RunResults } from '../models.ts';
import type { QueryParams, RequestBody, WithEnvelope } from '../types.ts';
import { RunHandle, type WaitOptions } from '../runHandle.ts';
import { Resource } from './resource.ts';

export type RunPrepareParams = RequestBody<'run_prepare'>;
/** Either an approved plan `{plan_id, plan_sha256}` or a direct request `{ref, inputs, ...}`. */
export type RunCreateParams = RequestBody<'run_create'>;
/** The list filters, plus `metadata: {key: value}` (sent as `metadata[key]=value`). */
export type RunListParams = QueryParams<'run_list'> & { metadata?: Record<string, string> };
export type RunEventsParams = QueryParams<'run_events'>;

/** A direct run request in SDK spelling (see `Runs.start` and `Silico.run`). */
export interface RunStartOptions {
  inputs?: Record<string, unknown>;
  /** A compute profile id (`cpu-small` when omitted). */
  computeProfile?: string;
  /** Up to 32 string pairs, filterable with `runs.list({metadata})`. */
  metadata?: Record<string, string>;
  maxRuntimeSeconds?: number;
  seed?: number;
  /** Answer from an identical completed run of yours at no cost, if there is one. */
  reuse?: boolean;
  /** Your own key for this logical request (a retry of yours must send the same one). */
  idempotencyKey?: string;
  /**
   * Let POST /runs answer once the run has ended, if it ends within this many seconds
   * (`Prefer: wait`, at most 60; keep it under the client's per-request timeout). A run
   * that outlasts it is answered as it stands then.
   */
  waitSeconds?: number;
  signal?: AbortSignal;
}

/** An artifact of a run after a verified download. */
export interface DownloadedArtifact extends VerifiedFile {
  artifact: RunArtifact;
}

export class Runs extends Resource {
  /** POST /run-plans: validate and price a run; returns a plan to approve by its digest. Starts nothing. */
  prepare(params: RunPrepareParams, opts?: RequestOptions): Promise<WithEnvelope<RunPlan>> {
    return this.postJson('/run-plans', params, opts);
  }

  /** POST /runs (always with an Idempotency-Key, reused by retries). Returns the run record. */
  create(params: RunCreateParams, opts?: RequestOptions): Promise<WithEnvelope<Run>> {
    return this.postJson('/runs', params, opts);
  }

  /** Starts a run of `ref` (the version may be omitted) in the direct form; returns its handle without waiting. */
  async start(ref: string, options: RunStartOptions = {}): Promise<RunHandle> {
    const run = await this.create({
      ref,
      inputs: options.inputs ?? {},
      ...(options.computeProfile !== undefined ? { compute_profile: options.computeProfile } : {}),
      ...(options.metadata !== undefined ? { metadata: options.metadata } : {}),
      ...(options.maxRuntimeSeconds !== undefined ? { max_runtime_seconds: options.maxRuntimeSeconds } : {}),
      ...(options.seed !== undefined ? { seed: options.seed } : {}),
      ...(options.reuse !== undefined ? { reuse: options.reuse } : {}),
    }, { idempotencyKey: options.idempotencyKey, signal: options.signal, ...preferWaitHeaders(options.waitSeconds) });
    return new RunHandle(this, run.id, run);
  }

  /** A handle on an existing run (no request is made). */
  handle(runId: string): RunHandle {
    return new RunHandle(this, runId);
  }

  /** Waits for a run: the completed run, or RunFailed / RunTimeout (which carries a handle to wait again). */
  wait(runId: string, options?: WaitOptions): Promise<Run> {
    return this.handle(runId).wait(options);
  }

  /** GET /runs/{id}: status, progress and charges. */
  get(runId: string, opts?: RequestOptions): Promise<WithEnvelope<Run>> {
    return this.getJson(path`/runs/${runId}`, undefined, opts);
  }

  /** GET /runs, newest first. Await for one page; `for await` for every run. */
  list(params: RunListParams = {}, opts?: RequestOptions): PageRequest<Run, WithEnvelope<CursorPageBody<Run>>> {
    return this.cursorList<Run>('/runs', params, opts);
  }

  /** POST /runs/{id}/cancel: only elapsed compute is charged; a terminal run is unchanged. */
  cancel(runId: string, opts?: RequestOptions): Promise<WithEnvelope<Run>> {
    return this.postJson(path`/runs/${runId}/cancel`, undefined, opts);
  }

  /** GET /runs/{id}/results: outputs, hashed artifacts and provenance. */
  /** GET /runs/{run_id}/results; `direct` also lists each artifact's `direct_download` where the deployment offers them. */
  results(runId: string, opts?: RequestOptions & { direct?: boolean }): Promise<WithEnvelope<RunResults>> {
    return this.getJson(path`/runs/${runId}/results`, opts?.direct ? { direct: true } : undefined, opts);
  }

  /** One page of a run's events after `after` (see RunHandle.events to iterate or follow). */
  listEvents(runId: string, params: RunEventsParams = {}, opts?: RequestOptions): Promise<WithEnvelope<RunEventPage>> {
    return this.getJson(path`/runs/${runId}/events`, params, opts);
  }

  /**
   * GET /runs/{id}/events as a live stream (one connection): the events after `after`,
   * then each new one as it is recorded, ending when the server closes the stream after
   * the terminal state event, or early if the connection is lost (resume with the last
   * seq as `after`; RunHandle.events({follow}) does that for you). Throws
   * EventStreamUnavailableError where no event stream is served.
   */
  async *streamEvents(runId: string, after = 0, opts: RequestOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    // Last-Event-ID is how SSE resumes, so a proxy that understands SSE sees it too.
    const headers = after > 0 ? { ...opts.headers, 'Last-Event-ID': String(after) } : opts.headers;
    const req = { method: 'GET', path: path`/runs/${runId}/events` } as const;
    for await (const message of openEventStream(this.http, req, { ...opts, headers })) {
      let event: RunEvent;
      try {
        event = JSON.parse(message.data) as RunEvent;
      } catch (err) {
        throw new SilicoError(`event ${message.id ?? '?'} of run ${runId} is not JSON`, { cause: err });
      }
      yield event;
    }
  }

  /** How long to wait before reconnecting to a run's event stream after `drops` drops in a row: the client's retry backoff. */
  reconnectDelayMs(drops: number): number {
    return backoffDelayMs(drops, this.http.config.retry);
  }

  /** GET /runs/{id}/artifacts/{artifact_id}/metadata: a private artifact (`public: false`) has `download_url: null`. */
  artifact(runId: string, artifactId: string, opts?: RequestOptions & { direct?: boolean }): Promise<WithEnvelope<RunArtifactMetadata>> {
    return this.getJson(path`/runs/${runId}/artifacts/${artifactId}/metadata`, opts?.direct ? { direct: true } : undefined, opts);
  }

  /**
   * Downloads one artifact to `dest`, verified against its recorded sha256 and size
   * while streaming (IntegrityError and no file on a mismatch). Pass the artifact from
   * `results()` or just its id (its metadata is read first). The bytes are fetched from
   * this client's base URL, never from the answer's `download_url`: the API key only
   * goes to the host the caller configured. An artifact listed without a `download_url`
   * (a private one) cannot be downloaded: a SilicoError, and nothing is requested.
   * With `direct`, the bytes come straight from the object store by the artifact's
   * presigned `direct_download` (asked for when not listed; no API key is sent there),
   * where the deployment offers one, else through the API; verified the same either way.
   */
  async downloadArtifact(runId: string, artifact: RunArtifact | string, dest: string, opts?: RequestOptions & { direct?: boolean }): Promise<VerifiedFile> {
    const meta = await this.downloadableArtifact(runId, artifact, opts);
    // Loaded on use: writing files is Node's business; the rest of the SDK runs in browsers too.
    const { saveVerified } = await import('../core/download.ts');
    const res = await this.artifactResponse(runId, meta, opts);
    return saveVerified(res, dest, { sha256: meta.sha256, size: meta.size_bytes }, `artifact ${meta.artifact_id} of run ${runId}`);
  }

  /** The artifact as listed, or read (with its direct_download when `direct` asks for one the listing lacks); refused when private. */
  private async downloadableArtifact(runId: string, artifact: RunArtifact | string, opts?: RequestOptions & { direct?: boolean }): Promise<RunArtifact> {
    if (typeof artifact !== 'string' && (!opts?.direct || artifact.direct_download)) return downloadable(runId, artifact);
    return downloadable(runId, await this.artifact(runId, typeof artifact === 'string' ? artifact : artifact.artifact_id, opts));
  }

  /** The artifact's bytes as an unread response: from the object store by its presigned URL when asked and listed, else through the API. */
  private async artifactResponse(runId: string, meta: Pick<RunArtifact, 'artifact_id' | 'direct_download'>, opts?: RequestOptions & { direct?: boolean }): Promise<Response> {
    if (opts?.direct && meta.direct_download) {
      const res = await this.http.config.fetch(meta.direct_download.url, { signal: opts.signal });
      if (!res.ok) throw new SilicoError(`artifact ${meta.artifact_id} of run ${runId}: the object store answered ${res.status} to its presigned URL`);
      return res;
    }
    return this.http.stream({ method: 'GET', path: path`/runs/${runId}/artifacts/${meta.artifact_id}`, accept: '*/*' }, opts);
  }

  /** The bytes of one artifact in memory, verified against its recorded sha256 and size while streaming (IntegrityError on a mismatch). */
  async artifactBytes(runId: string, artifact: RunArtifact | string, opts?: RequestOptions & { direct?: boolean }): Promise<VerifiedBytes> {
    const meta = await this.downloadableArtifact(runId, artifact, opts);
    const res = await this.artifactResponse(runId, meta, opts);
    return readVerified(res, { sha256: meta.sha256, size: meta.size_bytes }, `artifact ${meta.artifact_id} of run ${runId}`);
  }
}

/**
 * The artifact, when its caller can download it: the API lists a download URL only then
 * (null for a private artifact, which the download route never serves). The bytes are
 * still fetched by ids from this client's base URL, never from that URL.
 */
function downloadable<T extends Pick<RunArtifact, 'artifact_id' | 'download_url'>>(runId: string, artifact: T): T {
  if (artifact.download_url === null) throw new SilicoError(`artifact ${artifact.artifact_id} of run ${runId} is private: it is kept as the owner's evidence and cannot be downloaded`);
  return artifact;
}

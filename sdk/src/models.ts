/**
 * The records of the run routes. Those whose operations declare their schema (a run, its
 * events) are the generated types; the rest (results, plans, files) mirror the design
 * decisions until their operations declare one too.
 */
import type { Envelope, QueryParams, ResponseBody } from './types.ts';

/** A run's state: queued, running, cancelling, completed, failed, cancelled, timed_out. */
export type RunStatus = NonNullable<QueryParams<'run_list'>['status']>;

/** States a run never leaves. */
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'timed_out'];

export function isTerminalStatus(status: string): status is RunStatus {
  return (TERMINAL_RUN_STATUSES as readonly string[]).includes(status);
}

/** A run record (GET /runs/{run_id}, POST /runs, list items), as the server's schema declares it. */
export type Run = Omit<ResponseBody<'run_get'>, keyof Envelope>;

/** One stored artifact of a run, as results and the metadata route show it. */
export interface RunArtifact {
  id: string;
  artifact_id: string;
  /** The output port that produced it. */
  role: string;
  /** Untrusted: the SDK never uses it as a path without sanitising it. */
  file_name: string;
  content_type: string;
  format: string;
  size_bytes: number;
  /** Lowercase hex SHA-256 of the bytes; downloads are verified against it. */
  sha256: string;
  status: string;
  download_url: string;
}

/** GET /runs/{run_id}/results. */
export interface RunResults {
  run_id: string;
  status: RunStatus;
  /** Bounded JSON of the contract's outputs. */
  outputs: Record<string, unknown>;
  artifacts: RunArtifact[];
  provenance: {
    ref: string;
    resolved_ref: string;
    package_sha256: string;
    inputs_sha256: string;
    compute_profile: string;
    seed: number | null;
    started_at: string | null;
    finished_at: string | null;
    /** Only on a run answered from a completed one at no cost (`reuse: true`): that run. */
    reused_from?: string;
  };
}

/** Known event types; others may be added by the server. */
export type RunEventType = 'state_changed' | 'log' | 'progress' | 'artifact_stored' | 'charge_settled' | 'warning';

/** One entry of a run's log (GET /runs/{run_id}/events), as the server's schema declares it. */
export type RunEvent = RunEventPage['items'][number];

/** One page of a run's events. */
export type RunEventPage = Omit<ResponseBody<'run_events'>, keyof Envelope>;

/** A finding of a plan (prepare routes). */
export interface Finding {
  severity: 'info' | 'warning' | 'blocking';
  code: string;
  message: string;
  path: string | null;
}

/** POST /run-plans: a priced, digested proposal to approve before POST /runs. */
export interface RunPlan {
  object: 'run_plan';
  plan_id: string;
  plan_sha256: string;
  expires_at: string;
  status: 'ready' | 'blocked';
  findings: Finding[];
  /** The exact object `plan_sha256` digests (RFC 8785 canonical JSON), to recompute it. */
  digest_input: Record<string, unknown>;
  estimated_max_usd: number;
  resolved_ref: string;
  package_sha256: string;
  compute_profile: string;
  max_runtime_seconds: number;
  /** With `reuse: true` and an identical completed run: the run that answers this one (price $0). */
  reuse_of: { run_id: string } | null;
}

/** An uploaded (or imported) input file. */
export interface FileRecord {
  object: 'file';
  file_id: string;
  name: string;
  format: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  origin: Record<string, unknown> | null;
  created_at: string;
}

/** The list shape of cursor-paginated routes. */
export interface CursorPageBody<T> {
  items: T[];
  has_more: boolean;
  next_cursor: string | null;
}

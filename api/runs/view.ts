import type { DirectDownload } from '../../storage/directDownloads.ts';
import type { RunRow, ArtifactRow } from '../../storage/db/runs.ts';
import { isoTime } from '../../storage/ids.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { runArtifactUrl, runArtifactResourceUri } from '../artifactUrls.ts';

/** The run record exactly as docs/contract/gaps.md lists its fields. */
export function runView(r: RunRow) {
  return {
    id: r.id,
    run_id: r.id,
    object: 'run',
    kind: r.kind,
    status: r.status,
    ref: r.ref,
    resolved_ref: r.resolved_ref,
    package_sha256: r.package_sha256,
    inputs: r.inputs,
    metadata: r.metadata,
    compute_profile: r.compute_profile,
    max_runtime_seconds: r.max_runtime_seconds,
    credits_reserved: microsToUsd(r.reserved_micros),
    credits_settled: r.settled_micros === null ? null : microsToUsd(r.settled_micros),
    created_at: isoTime(r.created_at),
    started_at: isoTime(r.started_at),
    finished_at: isoTime(r.finished_at),
    error: r.error,
    progress: r.progress,
    artifact_count: r.artifact_count,
    experiment_id: r.experiment_id,
    plan_id: r.plan_id,
  };
}

/** One artifact as results and metadata routes show it: a download URL only where the caller can download it (api/artifactUrls.ts). */
export function artifactView(a: ArtifactRow, baseUrl: string, directDownload: DirectDownload | null = null) {
  return {
    id: a.id,
    artifact_id: a.id,
    role: a.role,
    file_name: a.file_name,
    content_type: a.content_type,
    format: a.format,
    size_bytes: Number(a.size_bytes),
    sha256: a.sha256,
    status: 'stored',
    download_url: runArtifactUrl(baseUrl, a),
    resource_uri: runArtifactResourceUri(a),
    direct_download: directDownload,
  };
}

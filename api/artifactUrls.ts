import type { ArtifactRow } from '../storage/db/runs.ts';
import type { JsonSchema } from './schemas/common.ts';

/**
 * The one rule for the download URL of anything listed as an artifact (docs/decisions.md,
 * API, "Artifact URLs"): a URL is listed only where its caller can download the bytes
 * with it; otherwise the field is `null`, never a URL that answers 404.
 * - A run's artifact (results, its metadata): the download route serves public artifacts
 *   only, so a private one (kept as its owner's evidence, for passports) lists `null`.
 * - A study's comparison file: one of the account's own files, always served by
 *   `GET /files/{file_id}/content`.
 * - A hosted invocation's artifact: no route serves its bytes whole
 *   (`hosted_invocation_artifact_get` shows a bounded part), so it lists no URL at all.
 */

/** Whether a run's artifact can be downloaded: the download route and every listing ask this. */
export function runArtifactDownloadable(a: Pick<ArtifactRow, 'public'>): boolean {
  return a.public;
}

/** Where a run's artifact is downloaded, or null when its caller cannot download it. */
export function runArtifactUrl(baseUrl: string, a: Pick<ArtifactRow, 'run_id' | 'id' | 'public'>): string | null {
  return runArtifactDownloadable(a) ? `${baseUrl}/runs/${a.run_id}/artifacts/${a.id}` : null;
}

/** The MCP resource a run's artifact is read as (`resources/read`), by the same rule as its URL: null when its caller cannot download it. */
export function runArtifactResourceUri(a: Pick<ArtifactRow, 'run_id' | 'id' | 'public'>): string | null {
  return runArtifactDownloadable(a) ? `silico://runs/${a.run_id}/artifacts/${a.id}` : null;
}

/** Where one of the account's files (a study's comparison file) is downloaded. */
export function fileUrl(baseUrl: string, fileId: string): string {
  return `${baseUrl}/files/${fileId}/content`;
}

/** The `download_url` of a run's artifact, as every output schema that lists one declares it. */
export const runArtifactUrlSchema: JsonSchema = {
  type: ['string', 'null'], format: 'uri',
  description: 'Where the bytes are downloaded (`GET /runs/{run_id}/artifacts/{artifact_id}`, hash them against `sha256`), listed only where the caller can download them: null for a private artifact (`public: false`, kept as the owner\'s evidence and never downloadable). Results list public artifacts only, so there it is always a URL.',
};

/** The `download_url` of a study's file: the account's own file, always downloadable. */
export const fileUrlSchema: JsonSchema = {
  type: 'string', format: 'uri',
  description: 'Where the bytes are downloaded (`GET /files/{file_id}/content`, the account\'s own file): always a URL.',
};

/** The `resource_uri` of a run's artifact, as every output schema that lists one declares it. */
export const runArtifactResourceUriSchema: JsonSchema = {
  type: ['string', 'null'], maxLength: 200,
  description: 'The MCP resource the bytes are read as (`resources/read`, up to 16 MiB; past that, download `download_url`), by the same rule: null for a private artifact.',
};

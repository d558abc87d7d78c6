import type { ArtifactRow } from '../storage/db/runs.ts';
import type { DirectDownload, DirectDownloads } from '../storage/directDownloads.ts';
import { blobKey } from '../storage/objects.ts';
import type { JsonSchema } from './schemas/common.ts';
import type { ToolResult } from './tools/tool.ts';

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

/**
 * A presigned URL of the object store for a run's artifact, by the same rule as its
 * `download_url`: only when asked (`direct`), only where the deployment offers direct
 * downloads, and never for an artifact its caller cannot download.
 */
export async function runArtifactDirectDownload(direct: DirectDownloads | null, a: Pick<ArtifactRow, 'public' | 'sha256' | 'file_name' | 'content_type'>, asked: boolean): Promise<DirectDownload | null> {
  if (!asked || !direct || !runArtifactDownloadable(a)) return null;
  return direct.url(blobKey(a.sha256), a.file_name, a.content_type);
}

/** The `direct_download` of a run's artifact. */
export const directDownloadSchema: JsonSchema = {
  oneOf: [
    { type: 'null' },
    {
      type: 'object', additionalProperties: false, required: ['url', 'expires_at'],
      properties: {
        url: { type: 'string', format: 'uri', description: 'A presigned GET of the object store: the bytes without the api in between. Hash them against `sha256` as from `download_url`.' },
        expires_at: { type: 'string', format: 'date-time', description: 'When the URL stops working; ask again for another.' },
      },
    },
  ],
  description: 'Asked for with `direct=true` where the deployment\'s object store is reachable by clients: a short-lived URL of the store itself. Null otherwise, and always for an artifact its caller cannot download.',
};

/** `redirect` on the download routes: 1 or true asks for a 307 to the object store. */
export const redirectQuery: JsonSchema = {
  enum: ['1', 'true', '0', 'false', null],
  description: 'With 1 (or true), where the deployment offers direct downloads: 307 to a short-lived presigned URL of the object store instead of relaying the bytes (the default).',
};

/** The 307 to a presigned URL, when asked (`redirect`) and offered; null: relay the bytes. */
export async function redirectToStore(direct: DirectDownloads | null, redirect: string | undefined, key: string, fileName: string, contentType: string): Promise<ToolResult | null> {
  if (!direct || !(redirect === '1' || redirect === 'true')) return null;
  const to = await direct.url(key, fileName, contentType);
  return { body: {}, raw: { status: 307, contentType: 'text/plain; charset=utf-8', body: Buffer.from(`Redirecting to the object store (until ${to.expires_at}).\n`), headers: { Location: to.url, 'Cache-Control': 'no-store' } } };
}

import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ObjectStoreConfig } from './objects.ts';

/** A short-lived URL of the object store that serves one object's bytes, and when it stops working. */
export interface DirectDownload { url: string; expires_at: string }

export interface DirectDownloads {
  /** A presigned GET of `key` (saved as `fileName`, typed `contentType`), valid for the configured seconds. */
  url(key: string, fileName: string, contentType: string): Promise<DirectDownload>;
}

/**
 * Downloads straight from the object store, for deployments whose store the client can
 * reach: a presigned GET (AWS's own presigner, signature v4, signed locally with no round
 * trip) against `endpoint`, the address clients use for the store, which may differ from
 * the one the service uses. The bytes never pass through the api; the client still hashes
 * them against the record's sha256.
 */
export function createDirectDownloads(cfg: ObjectStoreConfig, endpoint: string, expiresSeconds: number): DirectDownloads {
  const client = new S3Client({
    endpoint, region: cfg.region, forcePathStyle: true,
    credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
  });
  return {
    async url(key, fileName, contentType) {
      const url = await getSignedUrl(client, new GetObjectCommand({
        Bucket: cfg.bucket, Key: key,
        ResponseContentDisposition: `attachment; filename*=UTF-8''${encodeURIComponent(fileName)}`,
        ResponseContentType: contentType,
      }), { expiresIn: expiresSeconds });
      return { url, expires_at: new Date(Date.now() + expiresSeconds * 1000).toISOString() };
    },
  };
}

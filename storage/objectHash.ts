import { pipeline } from 'node:stream/promises';
import { HashingStream } from './digest.ts';
import type { ObjectStore } from './objects.ts';

/** The store's answer that a key holds nothing (as opposed to the store not answering). */
export function isMissingObject(err: unknown): boolean {
  return (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode === 404;
}

/**
 * Re-hashes an object by streaming it from the store (bounded memory whatever its size),
 * calling `progress` as bytes go by (an activity's heartbeat). Null when the store has no
 * such object; a store that does not answer throws (DependencyUnavailable), so a caller
 * never mistakes an outage for missing bytes.
 */
export async function hashStoredObject(objects: ObjectStore, key: string, progress?: () => void): Promise<{ sha256: string; size: number } | null> {
  let body;
  try {
    ({ body } = await objects.getStream(key));
  } catch (err) {
    if (isMissingObject(err)) return null;
    throw err;
  }
  const hash = new HashingStream();
  if (progress) hash.on('data', progress);
  hash.resume();
  await pipeline(body, hash);
  return { sha256: hash.digest(), size: hash.bytes };
}

/** An object's bytes, or null when the store has no such object (an outage still throws). */
export async function storedBytesOrNull(objects: ObjectStore, key: string): Promise<Buffer | null> {
  try {
    return await objects.getBytes(key);
  } catch (err) {
    if (isMissingObject(err)) return null;
    throw err;
  }
}

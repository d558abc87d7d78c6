/**
 * Verified downloads held in memory, for callers without a file system (the console in a
 * browser). The SHA-256 is computed while the body streams and the bytes are handed
 * over only when digest and size equal the identity the API recorded: a caller never
 * sees tampered or truncated bytes.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ConnectionError, IntegrityError, SilicoError } from '../errors.ts';
import { normalizeSha256, type ExpectedIdentity } from './identity.ts';

export interface VerifiedBytes {
  bytes: Uint8Array<ArrayBuffer>;
  sha256: string;
  size_bytes: number;
}

export async function readVerified(res: Response, expected: ExpectedIdentity, resource: string): Promise<VerifiedBytes> {
  if (!res.body) throw new SilicoError(`${resource}: the answer has no body`);
  const want = normalizeSha256(expected.sha256);
  const wantSize = expected.size ?? null;
  const hash = sha256.create();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    let step: ReadableStreamReadResult<Uint8Array>;
    try {
      step = await reader.read();
    } catch (err) {
      throw new ConnectionError(`${resource}: the download broke off after ${size} bytes`, { cause: err });
    }
    if (step.done) break;
    size += step.value.length;
    // Stop reading as soon as the body is longer than recorded: it cannot verify.
    if (wantSize !== null && size > wantSize) {
      await reader.cancel();
      throw new IntegrityError(resource, want, 'unknown (body longer than recorded)', wantSize, size);
    }
    hash.update(step.value);
    chunks.push(step.value);
  }
  const actual = bytesToHex(hash.digest());
  if (actual !== want || (wantSize !== null && size !== wantSize)) throw new IntegrityError(resource, want, actual, wantSize, size);
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return { bytes, sha256: actual, size_bytes: size };
}

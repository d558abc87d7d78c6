/**
 * Verified downloads. Bytes are hashed as they stream to a temporary file next to the
 * destination; only when the SHA-256 (and size, when known) equals the identity recorded
 * by the API is the file renamed into place. On a mismatch or a broken stream the
 * temporary file is deleted, so a destination path either holds verified bytes or
 * nothing: no caller can pick up a half-written or tampered file by accident.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { ConnectionError, IntegrityError, SilicoError } from '../errors.ts';
import { normalizeSha256, type ExpectedIdentity } from './identity.ts';

export interface VerifiedFile {
  path: string;
  sha256: string;
  size_bytes: number;
}

/** Streams `res`'s body to `dest`, verifying it against `expected` before it appears there. */
export async function saveVerified(res: Response, dest: string, expected: ExpectedIdentity, resource: string): Promise<VerifiedFile> {
  if (!res.body) throw new SilicoError(`${resource}: the answer has no body`);
  const want = normalizeSha256(expected.sha256);
  const wantSize = expected.size ?? null;
  const tmp = `${dest}.${randomBytes(6).toString('hex')}.partial`;
  const hash = createHash('sha256');
  let size = 0;
  let networkFailed = false;
  const meter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      // Stop reading as soon as the body is longer than recorded: it cannot verify.
      if (wantSize !== null && size > wantSize) {
        cb(new IntegrityError(resource, want, 'unknown (body longer than recorded)', wantSize, size));
        return;
      }
      hash.update(chunk);
      cb(null, chunk);
    },
  });
  const source = Readable.fromWeb(res.body as unknown as WebReadableStream<Uint8Array>);
  source.once('error', () => (networkFailed = true));
  try {
    await pipeline(source, meter, createWriteStream(tmp, { flags: 'wx' }));
    const actual = hash.digest('hex');
    if (actual !== want || (wantSize !== null && size !== wantSize)) throw new IntegrityError(resource, want, actual, wantSize, size);
    await rename(tmp, dest);
    return { path: dest, sha256: actual, size_bytes: size };
  } catch (err) {
    await rm(tmp, { force: true });
    if (networkFailed && !(err instanceof SilicoError)) throw new ConnectionError(`${resource}: the download broke off after ${size} bytes`, { cause: err });
    throw err;
  }
}

import { createHash, hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import canonicalize from 'canonicalize';

/** RFC 8785 canonical JSON text of a value. */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new TypeError('value has no canonical JSON form');
  return text;
}

/** Lowercase hex SHA-256 of raw bytes or a UTF-8 string (one-shot: no Hash object, which every API key's lookup would make). */
export function sha256Hex(data: string | Uint8Array): string {
  return hash('sha256', data, 'hex');
}

/** Lowercase hex SHA-256 of the RFC 8785 canonical JSON of a value. */
export function digestJson(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/**
 * A pass-through stream that hashes and counts the bytes flowing through it, so a
 * digest is known the moment an upload ends without buffering the body.
 */
export class HashingStream extends Transform {
  private readonly hash = createHash('sha256');
  bytes = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    cb(null, chunk);
  }
  /** Valid once the stream has ended. */
  digest(): string {
    return this.hash.digest('hex');
  }
}

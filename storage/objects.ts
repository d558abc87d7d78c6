
import {
  S3Client, CreateBucketCommand, HeadBucketCommand, PutObjectCommand, GetObjectCommand, HeadObjectCommand, DeleteObjectCommand,
  CopyObjectCommand, DeleteObjectsCommand, paginateListObjectsV2,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { UndiciHttpHandler } from '@smithy/undici-http-handler';
import type { Readable } from 'node:stream';
import { sha256Hex } from './digest.ts';
import { DependencyUnavailable } from './dependencies.ts';

const BODY_COMMANDS = new Set(['PutObjectCommand', 'UploadPartCommand']);

export interface ObjectStoreConfig { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string; bucket: string }

/** An existing blob stored again by putBlob once older than this (see the object sweep). */
const REWRITE_AFTER_MS = 3600_000;

/** Content address of a blob: every byte sequence is stored once under its sha256. */
export function blobKey(sha256: string): string {
  return `blobs/sha256/${sha256}`;
}

/** The S3-compatible byte store (MinIO locally). */
export interface ObjectStore {
  bucket: string;
  client: S3Client;
  ensureBucket(): Promise<void>;
  /** Stores bytes under their content address; returns the sha256. */
  putBlob(bytes: Uint8Array, contentType?: string): Promise<string>;
  putObject(key: string, bytes: Uint8Array, contentType?: string): Promise<void>;
  getBytes(key: string): Promise<Buffer>;
  exists(key: string): Promise<boolean>;
  /** When the object was last written, or null when there is none. */
  lastModified(key: string): Promise<Date | null>;
  /** Streams bytes to `key` (multipart, bounded memory); `signal` aborts and removes the upload. */
  putStream(key: string, body: Readable, contentType: string, signal?: AbortSignal): Promise<void>;
  delete(key: string): Promise<void>;
  /** Copies an object within the bucket (the store copies the bytes; none pass through here). */
  copy(fromKey: string, toKey: string): Promise<void>;
  /** The objects under a prefix, with when each was last written. */
  list(prefix: string): Promise<Array<{ key: string; lastModified: Date }>>;
  /** Removes the objects under a prefix (those written before `olderThan` only, when given); returns how many. */
  deletePrefix(prefix: string, olderThan?: Date): Promise<number>;
  /** A byte stream of an object, optionally a `bytes=a-b` range; with its size. */
  getStream(key: string, range?: string): Promise<{ body: Readable; size: number; contentRange?: string }>;
  /** True when the bucket answers (readiness). */
  ping(): Promise<boolean>;
}

/**
 * Opens the object store. With `timeoutMs` (the api, workers) connecting, the answer's
 * headers and each pause in a body are bounded, and a call is tried twice at most: a
 * store that refuses or stops answering fails the call as DependencyUnavailable in seconds.
 */
export function createObjectStore(cfg: ObjectStoreConfig, opts: { timeoutMs?: number } = {}): ObjectStore {
  const client = new S3Client({
    endpoint: cfg.endpoint,
    region: cfg.region,
    forcePathStyle: true,
    credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
    // Every byte we store or serve is already SHA-256 hashed by us while it streams
    // (uploads, artifacts, members), and served with that digest as its ETag; the SDK's
    // own CRC on each request and response would hash it all a second time in JS.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // Smithy's undici handler instead of node:http: every download the api relays is read
    // from the store, and Node's http client copies each 64 KiB body chunk into a new
    // buffer (more copies, more garbage). Relaying 1 GiB cost the api 1.4-1.7 s of CPU
    // with undici against 2.0-2.4 s with node:http, measured here.
    requestHandler: new UndiciHttpHandler(opts.timeoutMs
      ? { dispatcher: { connect: { timeout: opts.timeoutMs }, headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs } }
      : {}),
    ...(opts.timeoutMs ? { maxAttempts: 2 } : {}),
  });
  // The store's own answers (a missing key, a bucket that exists) stay what they are;
  // anything else (no connection, no answer in time, a 5xx) is the store being unavailable.
  client.middlewareStack.add((next) => async (args) => {
    try {
      return await next(args);
    } catch (err) {
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      if (status !== undefined && status < 500) throw err;
      throw new DependencyUnavailable('object_store', err);
    }
  }, { step: 'initialize', name: 'silicoDependencyUnavailable' });
  // For the same reason, bodies are sent as UNSIGNED-PAYLOAD, the SigV4 option S3 defines
  // for this: the signature still covers every header, but the SDK no longer hashes each
  // part once more to sign it (as much CPU as our own digest) nor the store to check it.
  // Transit integrity is TLS's in production (an https endpoint); our digest stays the record.
  client.middlewareStack.add((next, context) => async (args) => {
    const headers = (args.request as { headers?: Record<string, string> }).headers;
    if (headers && BODY_COMMANDS.has(context.commandName ?? '')) headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
    return next(args);
  }, { step: 'build', name: 'silicoUnsignedPayload' });
  const store: ObjectStore = {
    bucket: cfg.bucket,
    client,
    async ensureBucket() {
      try {
        await client.send(new HeadBucketCommand({ Bucket: cfg.bucket }));
      } catch {
        try {
          await client.send(new CreateBucketCommand({ Bucket: cfg.bucket }));
        } catch (err) {
          // Another process may have created it between the two calls.
          if ((err as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw err;
        }
      }
    },
    async putBlob(bytes, contentType = 'application/octet-stream') {
      const sha = sha256Hex(bytes);
      const key = blobKey(sha);
      // Stored anew when missing, or when last written long ago: bytes named again are
      // young again, so the sweep of unnamed objects (its grace is a day) leaves them.
      const at = await store.lastModified(key);
      if (!at || Date.now() - at.getTime() > REWRITE_AFTER_MS) await store.putObject(key, bytes, contentType);
      return sha;
    },
    async putObject(key, bytes, contentType = 'application/octet-stream') {
      await client.send(new PutObjectCommand({ Bucket: cfg.bucket, Key: key, Body: bytes, ContentType: contentType }));
    },
    async getBytes(key) {
      const out = await client.send(new GetObjectCommand({ Bucket: cfg.bucket, Key: key }));
      return Buffer.from(await out.Body!.transformToByteArray());
    },
    async lastModified(key) {
      try {
        return (await client.send(new HeadObjectCommand({ Bucket: cfg.bucket, Key: key }))).LastModified ?? null;
      } catch (err) {
        if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return null;
        throw err;
      }
    },
    async exists(key) {
      return (await store.lastModified(key)) !== null;
    },

    async putStream(key, body, contentType, signal) {
      // Parts of 5 MiB (S3's minimum), one in flight while the next fills: an upload's
      // peak memory stays near 40 MiB whatever its size. A second part in flight made a
      // 1 GiB upload about a third faster but took the peak past 64 MiB (bench:files).
      const upload = new Upload({ client, params: { Bucket: cfg.bucket, Key: key, Body: body, ContentType: contentType }, queueSize: 1, partSize: 5 * 1024 * 1024 });
      signal?.addEventListener('abort', () => void upload.abort().catch(() => undefined));
      await upload.done();
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: cfg.bucket, Key: key }));
    },
    async copy(fromKey, toKey) {
      await client.send(new CopyObjectCommand({ Bucket: cfg.bucket, Key: toKey, CopySource: `${cfg.bucket}/${fromKey.split('/').map(encodeURIComponent).join('/')}` }));
    },
    async list(prefix) {
      const found: Array<{ key: string; lastModified: Date }> = [];
      for await (const page of paginateListObjectsV2({ client }, { Bucket: cfg.bucket, Prefix: prefix })) {
        for (const o of page.Contents ?? []) if (o.Key) found.push({ key: o.Key, lastModified: o.LastModified ?? new Date(0) });
      }
      return found;
    },
    async deletePrefix(prefix, olderThan) {
      const keys = (await store.list(prefix)).filter((o) => !olderThan || o.lastModified < olderThan).map((o) => o.key);
      // DeleteObjects takes at most 1,000 keys a request.
      for (let i = 0; i < keys.length; i += 1000) {
        await client.send(new DeleteObjectsCommand({ Bucket: cfg.bucket, Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true } }));
      }
      return keys.length;
    },
    async getStream(key, range) {
      const out = await client.send(new GetObjectCommand({ Bucket: cfg.bucket, Key: key, Range: range }));
      const body = out.Body as Readable;
      // A download whose client goes away is destroyed by Koa after its pipeline has ended
      // and let go of the stream; undici's body then reports the abort as an 'error' that
      // nobody listens to any more, which would end the api process. Readers still get
      // every error through their own listeners (pipeline, async iteration).
      body.on('error', () => undefined);
      return { body, size: Number(out.ContentLength ?? 0), contentRange: out.ContentRange };
    },
    async ping() {
      await client.send(new HeadBucketCommand({ Bucket: cfg.bucket }));
      return true;
    },
  };
  return store;
}


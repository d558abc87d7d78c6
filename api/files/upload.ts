import busboy from 'busboy';
import { PassThrough } from 'node:stream';
import type { ToolContext } from '../tools/tool.ts';
import { ApiError, errors } from '../errors.ts';
import { textProblem } from '../validation.ts';
import { HashingStream } from '../../storage/digest.ts';
import { newUuid } from '../../storage/ids.ts';
import { sniffFormat } from '../../storage/formats.ts';
import { insertFile, type FileRow } from '../../storage/db/files.ts';

const SNIFF_BYTES = 4100;

/**
 * Receives `multipart/form-data` with one `file` part and streams it to the object
 * store while hashing it: memory stays bounded whatever the size. Past the upload bound
 * the answer is 413; a body that ends early is a 400; either way the partial upload is
 * aborted and nothing is recorded.
 */
export async function receiveUpload(ctx: ToolContext): Promise<FileRow> {
  const req = ctx.http?.request;
  if (!req) throw errors.invalidRequest('File uploads are REST only: POST /v1/files as multipart/form-data.');
  const type = req.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('multipart/form-data')) throw errors.unsupportedMediaType(type, 'multipart/form-data with a `file` part');
  const limit = ctx.deps.config.limits.uploadBytes;
  const fileId = newUuid();
  // Streamed to its final key; the digest is known only at the end, so it is recorded, not used as the key.
  const objectKey = `files/${fileId}`;
  const abort = new AbortController();
  let parser: busboy.Busboy;
  try {
    // Browsers and fetch send a file name as raw UTF-8 (busboy would read it as latin1).
    parser = busboy({ headers: req.headers, defParamCharset: 'utf8', limits: { files: 1, fileSize: limit, fields: 20, parts: 25 } });
  } catch {
    throw errors.invalidRequest('The multipart body has no boundary.', 'file');
  }
  const received = await new Promise<{ name: string; head: Buffer; hash: HashingStream }>((resolve, reject) => {
    let upload: Promise<void> | undefined;
    let failed = false;
    const fail = (err: ApiError) => {
      if (failed) return;
      failed = true;
      abort.abort();
      req.unpipe(parser);
      req.resume();
      reject(err);
    };
    let result: { name: string; head: Buffer; hash: HashingStream } | undefined;
    parser.on('file', (field, stream, info) => {
      if (field !== 'file' || result) {
        stream.resume();
        return;
      }
      // busboy decodes RFC 5987 names (filename*=UTF-8''...), so a name can hold U+0000.
      const nameProblem = info.filename ? textProblem(info.filename) : undefined;
      if (nameProblem) {
        stream.resume();
        fail(errors.validation('parameter_invalid_format', `The file name ${nameProblem}.`, 'file'));
        return;
      }
      const hash = new HashingStream();
      const body = new PassThrough();
      const chunks: Buffer[] = [];
      let headBytes = 0;
      hash.on('data', (c: Buffer) => {
        if (headBytes < SNIFF_BYTES) {
          chunks.push(c.subarray(0, SNIFF_BYTES - headBytes));
          headBytes += Math.min(c.length, SNIFF_BYTES - headBytes);
        }
      });
      stream.on('limit', () => fail(errors.payloadTooLarge(limit)));
      // A body that ends early errors the part stream itself: handled here, never uncaught.
      stream.on('error', (err: Error) => {
        body.destroy();
        fail(errors.invalidRequest(`The multipart body is malformed or ended early: ${err.message}.`, 'file'));
      });
      hash.pipe(body);
      stream.pipe(hash);
      result = { name: (info.filename || 'upload').slice(0, 255), head: Buffer.alloc(0), hash };
      upload = ctx.deps.objects.putStream(objectKey, body, 'application/octet-stream', abort.signal).then(() => {
        result!.head = Buffer.concat(chunks);
      });
      upload.catch(() => fail(errors.serviceUnavailable('object_store')));
    });
    parser.on('error', (err: Error) => fail(errors.invalidRequest(`The multipart body is malformed or ended early: ${err.message}.`, 'file')));
    parser.on('close', () => {
      if (failed) return;
      if (!result || !upload) return fail(errors.validation('parameter_missing', 'The form needs a `file` part.', 'file'));
      upload.then(() => (failed ? undefined : resolve(result!)), () => undefined);
    });
    req.on('aborted', () => fail(errors.invalidRequest('The upload was interrupted.', 'file')));
    req.pipe(parser);
  }).catch(async (err) => {
    await ctx.deps.objects.delete(objectKey).catch(() => undefined);
    throw err;
  });
  const sha256 = received.hash.digest();
  const { format, content_type } = await sniffFormat(received.head, received.name);
  try {
    const row = await insertFile(ctx.deps.db, {
      id: fileId, account_id: ctx.caller.account.id, name: received.name, format, content_type, size_bytes: received.hash.bytes, sha256, object_key: objectKey,
    });
    return row!;
  } catch (err) {
    // Not recorded, so not kept: an upload either completes or leaves no bytes behind.
    await ctx.deps.objects.delete(objectKey).catch(() => undefined);
    throw err;
  }
}

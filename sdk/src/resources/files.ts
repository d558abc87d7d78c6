/**
 * Files: upload inputs (streamed from disk, never read into memory), list and read
 * them, download their bytes verified against the recorded sha256, and copy run
 * artifacts into reusable files.
 */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { VerifiedFile } from '../core/download.ts';
import type { CursorPageBody, FileRecord } from '../models.ts';
import type { QueryParams, RequestBody, ResponseBody, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

/** A path on disk, or bytes already in memory. */
export type FileSource = string | Blob | Uint8Array;

export interface UploadOptions extends RequestOptions {
  /** The name the server records (default: the path's base name, a File's name, or `upload.bin`). */
  filename?: string;
  contentType?: string;
}

export class Files extends Resource {
  /** GET /files, newest first. */
  list(params: QueryParams<'file_list'> = {}, opts?: RequestOptions): PageRequest<FileRecord, WithEnvelope<CursorPageBody<FileRecord>>> {
    return this.cursorList<FileRecord>('/files', params, opts);
  }

  /**
   * POST /files (multipart, field `file`). A path is opened with `fs.openAsBlob`, so
   * the bytes stream from disk on every attempt (a retry re-reads the file).
   */
  async upload(source: FileSource, options: UploadOptions = {}): Promise<WithEnvelope<FileRecord>> {
    const type = options.contentType ?? '';
    // A path is Node's business, loaded on use: the rest of the SDK runs in browsers too.
    const fromPath = typeof source === 'string' ? await Promise.all([import('node:fs'), import('node:path')]) : null;
    const blob = typeof source === 'string' ? await fromPath![0].openAsBlob(source, { type })
      : source instanceof Blob ? source : new Blob([source as Uint8Array<ArrayBuffer>], { type });
    const name = options.filename ?? (typeof source === 'string' ? fromPath![1].basename(source) : source instanceof File ? source.name : 'upload.bin');
    const form = () => {
      const f = new FormData();
      f.append('file', blob, name);
      return f;
    };
    return this.http.json({ method: 'POST', path: '/files', form }, options);
  }

  /** GET /files/{file_id}: metadata, and with `include_content` up to 64 KiB of (untrusted) content. */
  get(fileId: string, params: QueryParams<'file_get'> = {}, opts?: RequestOptions): Promise<WithEnvelope<FileRecord> & ResponseBody<'file_get'>> {
    return this.getJson(path`/files/${fileId}`, params, opts);
  }

  /** GET /files/{file_id}/content as an unread Response (unverified; prefer `download`). */
  content(fileId: string, opts?: RequestOptions): Promise<Response> {
    return this.http.stream({ method: 'GET', path: path`/files/${fileId}/content`, accept: '*/*' }, opts);
  }

  /** Downloads a file's bytes to `dest`, verified against its recorded sha256 and size (IntegrityError and no file otherwise). */
  async download(fileId: string, dest: string, opts?: RequestOptions): Promise<VerifiedFile> {
    const meta = await this.get(fileId, {}, opts);
    // Loaded on use: writing files is Node's business; the rest of the SDK runs in browsers too.
    const { saveVerified } = await import('../core/download.ts');
    const res = await this.content(fileId, opts);
    return saveVerified(res, dest, { sha256: meta.sha256, size: meta.size_bytes }, `file ${fileId}`);
  }

  /** POST /files/from-run: copy verified artifact bytes into reusable files. */
  importFromRun(body: RequestBody<'file_import_from_run'>, opts?: RequestOptions): Promise<ResponseBody<'file_import_from_run'>> {
    return this.postJson('/files/from-run', body, opts);
  }
}

/**
 * The base of every resource: thin typed verbs over the shared HttpClient, so each
 * resource file reads as its route table (method, path, parameters, result type).
 */
import type { HttpClient, RequestOptions } from '../core/http.ts';
import type { QueryInput } from '../core/url.ts';
import { cursorPages, type PageRequest } from '../core/pagination.ts';
import type { CursorPageBody } from '../models.ts';
import type { WithEnvelope } from '../types.ts';

export abstract class Resource {
  protected readonly http: HttpClient;
  constructor(http: HttpClient) {
    this.http = http;
  }

  protected getJson<T>(path: string, query?: object, opts?: RequestOptions): Promise<T> {
    return this.http.json<T>({ method: 'GET', path, query: query as QueryInput | undefined }, opts);
  }

  /** POST; a body-less POST (cancel) sends none. Each call carries an Idempotency-Key. */
  protected postJson<T>(path: string, body?: unknown, opts?: RequestOptions): Promise<T> {
    return this.http.json<T>({ method: 'POST', path, body }, opts);
  }

  protected patchJson<T>(path: string, body: unknown, opts?: RequestOptions): Promise<T> {
    return this.http.json<T>({ method: 'PATCH', path, body }, opts);
  }

  protected putJson<T>(path: string, body: unknown, opts?: RequestOptions): Promise<T> {
    return this.http.json<T>({ method: 'PUT', path, body }, opts);
  }

  /** A cursor-paginated GET: the caller's `cursor` (if any) is where the first page starts. */
  protected cursorList<T>(path: string, params: { cursor?: string | null }, opts?: RequestOptions): PageRequest<T, WithEnvelope<CursorPageBody<T>>> {
    return cursorPages((cursor) => this.getJson<WithEnvelope<CursorPageBody<T>>>(path, { ...params, cursor }, opts), params.cursor ?? null);
  }
}

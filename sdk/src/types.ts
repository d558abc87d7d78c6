/**
 * Type helpers over the generated contract (`generated/openapi.ts`, built by
 * `npm run sdk:types` from the server's OpenAPI document). Every method's parameters and
 * results are written in terms of these, keyed by operationId (= MCP tool name), so a
 * contract change shows up as a compile error here instead of a surprise at runtime.
 */
import type { operations } from './generated/openapi.ts';

export type { operations, paths, components } from './generated/openapi.ts';

/** An operationId of the API, e.g. `run_create`. */
export type OperationId = keyof operations;

type Parameters<K extends OperationId> = operations[K]['parameters'];

/** Path parameters of an operation (`{run_id}`, ...). */
export type PathParams<K extends OperationId> = Parameters<K> extends { path: infer P } ? P : Record<string, never>;

/** Query parameters of an operation; every one is optional unless the contract says so. */
export type QueryParams<K extends OperationId> = NonNullable<Parameters<K>['query']>;

/** The JSON request body of an operation. */
export type RequestBody<K extends OperationId> =
  operations[K] extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;

type Success<R> = R extends { 200: infer S } ? S : R extends { 201: infer S } ? S : never;

/** The JSON success body of an operation: its own fields plus the envelope. */
export type ResponseBody<K extends OperationId> =
  Success<operations[K]['responses']> extends { content: { 'application/json': infer B } } ? B : never;

/** The fields every enveloped success body carries (`request_id`, `warnings`, ...). */
export type Envelope = Pick<ResponseBody<'run_get'>, 'schema_version' | 'request_id' | 'warnings' | 'next_actions' | 'links'>;

/** A record as a route returns it: the record's fields at the top level plus the envelope. */
export type WithEnvelope<T> = T & Envelope;

/** The item type of a list operation, where the contract describes it. */
export type ListItem<K extends OperationId> =
  ResponseBody<K> extends { items?: Array<infer I> } ? (unknown extends I ? Record<string, unknown> : I) : Record<string, unknown>;

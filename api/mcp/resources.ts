import { Readable } from 'node:stream';
import type { ReadResourceResult, Resource, ResourceTemplate } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';
import type { RouteTable } from '../router.ts';
import type { Caller, Deps, ToolResult } from '../tools/tool.ts';
import { authorizeCall, renderBody, runOperation } from '../operation.ts';
import { compileInput, check } from '../validation.ts';
import { errorBody, errors, knownApiError } from '../errors.ts';

/** The largest resource `resources/read` returns; a larger artifact is downloaded over REST. */
export const MAX_RESOURCE_BYTES = 16 * 1024 * 1024;

/** MCP's code for a resource that does not exist (or is another account's: the same answer). */
const RESOURCE_NOT_FOUND = -32002;

/**
 * A kind of resource: its URI template, and the operation that reads it (the REST route's
 * own, so scope, ownership and the artifact rule are the route's). `query` names the
 * template variables the operation takes as query parameters; the rest are its path.
 */
interface Kind {
  template: ResourceTemplate;
  operation: string;
  query?: string[];
}

const KINDS: Kind[] = [
  {
    template: { uriTemplate: 'silico://runs/{run_id}/results', name: 'run-results', title: 'A run\'s results', mimeType: 'application/json', description: 'A run\'s outputs, public artifacts (each with its resource_uri) and provenance, as GET /v1/runs/{run_id}/results answers them.' },
    operation: 'run_results',
  },
  {
    template: { uriTemplate: 'silico://runs/{run_id}/artifacts/{artifact_id}', name: 'run-artifact', title: 'A run\'s artifact', description: `The bytes of a run's public artifact: text for CSV and JSON, a base64 blob otherwise, up to ${MAX_RESOURCE_BYTES / 1024 / 1024} MiB (past that, GET /v1/runs/{run_id}/artifacts/{artifact_id}). Hash them against the artifact's sha256 before interpreting them.` },
    operation: 'run_artifact_download',
  },
  {
    template: { uriTemplate: 'silico://hub/releases/{reference}', name: 'release', title: 'A release', mimeType: 'application/json', description: 'One immutable release (namespace/name@version, percent-encoded), as GET /v1/hub/releases/{reference} answers it.' },
    operation: 'hub_inspect',
  },
  {
    template: { uriTemplate: 'silico://passports/{passport_id}', name: 'passport', title: 'A stored passport', mimeType: 'application/json', description: 'A stored evidence passport exactly as signed, as GET /v1/passports?passport_id= answers it.' },
    operation: 'passport_get', query: ['passport_id'],
  },
];

/** The resource templates `resources/templates/list` offers. */
export const RESOURCE_TEMPLATES: ResourceTemplate[] = KINDS.map((k) => k.template);

const TEXT_TYPES = /^(text\/|application\/(json|csv|x-ndjson|yaml|xml)\b)|\+json\b/;

export interface ResourceContext { deps: Deps; caller: Caller; requestId: string }

/** A result's bytes, read whole, refusing past the bound without reading it all. */
async function boundedBytes(raw: NonNullable<ToolResult['raw']>, uri: string, restPath: string): Promise<Buffer> {
  const tooLarge = () => new McpError(ErrorCode.InvalidParams, `${uri} is larger than ${MAX_RESOURCE_BYTES} bytes, the most resources/read returns: download it with GET /v1${restPath} (hash it against its sha256).`, { download_path: `/v1${restPath}`, max_bytes: MAX_RESOURCE_BYTES });
  if (Number(raw.headers?.['Content-Length'] ?? 0) > MAX_RESOURCE_BYTES) {
    if (!Buffer.isBuffer(raw.body)) (raw.body as Readable).destroy?.();
    throw tooLarge();
  }
  if (Buffer.isBuffer(raw.body)) return raw.body;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of raw.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_RESOURCE_BYTES) {
      (raw.body as Readable).destroy?.();
      throw tooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The MCP error of an operation's refusal: not found as MCP's resource-not-found, the rest with the spec's envelope as data. */
function asMcpError(raw: unknown, uri: string, requestId: string): McpError {
  if (raw instanceof McpError) return raw;
  const err = knownApiError(raw);
  if (!err) return new McpError(ErrorCode.InternalError, 'The resource could not be read.', errorBody(errors.internal(), requestId, false));
  const data = errorBody(err, requestId, false);
  if (err.status === 404) return new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, data);
  return new McpError(err.status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidParams, err.message, data);
}

/**
 * Resources and their reads, over the operations of the route table: a URI is matched to
 * its template, the template's variables become the operation's input (checked by its own
 * schemas), and the operation runs under the route's scope and gateway rule for the caller.
 */
export function createResources(table: RouteTable) {
  /** An operation of the table with its route and compiled input, resolved once. */
  const operation = (name: string) => {
    const tool = table.tools.get(name);
    const route = table.routes.find((r) => r.tool === name);
    if (!tool || !route) throw new Error(`MCP resources name unknown operation ${name}`);
    return { tool, route, compiled: compileInput(tool) };
  };
  type Operation = ReturnType<typeof operation>;
  const kinds = KINDS.map((k) => ({ ...k, matcher: new UriTemplate(k.template.uriTemplate), ...operation(k.operation) }));
  const runList = operation('run_list');
  const runResults = operation('run_results');

  function operate(op: Operation, path: Record<string, unknown>, query: Record<string, unknown>, ctx: ResourceContext): Promise<ToolResult> {
    authorizeCall(ctx.caller, op.route, op.tool);
    check(op.compiled.path, path);
    check(op.compiled.query, query);
    return runOperation(op.tool, { ...query, ...path }, { deps: ctx.deps, caller: ctx.caller, requestId: ctx.requestId });
  }

  return {
    /** `resources/read`: JSON as text, an artifact's bytes as text (CSV, JSON) or a base64 blob. */
    async read(uri: string, ctx: ResourceContext): Promise<ReadResourceResult> {
      try {
        for (const k of kinds) {
          const vars = k.matcher.match(uri);
          if (!vars) continue;
          const values = Object.fromEntries(Object.entries(vars).map(([name, v]) => [name, decodeURIComponent(String(v))]));
          const query = Object.fromEntries(Object.entries(values).filter(([name]) => k.query?.includes(name)));
          const path = Object.fromEntries(Object.entries(values).filter(([name]) => !k.query?.includes(name)));
          const result = await operate(k, path, query, ctx);
          if (!result.raw) return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(renderBody(k.route, result, ctx.requestId)) }] };
          const restPath = k.route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(path[name])));
          const bytes = await boundedBytes(result.raw, uri, restPath);
          const mimeType = result.raw.contentType;
          return { contents: [TEXT_TYPES.test(mimeType) ? { uri, mimeType, text: bytes.toString('utf8') } : { uri, mimeType, blob: bytes.toString('base64') }] };
        }
        throw new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri} matches none of the resource templates.`);
      } catch (err) {
        throw asMcpError(err, uri, ctx.requestId);
      }
    },

    /**
     * `resources/list`: the caller's runs, newest first, a page of them per call (the
     * cursor is the runs list's): each run's results, then each of its public artifacts.
     */
    async list(cursor: string | undefined, ctx: ResourceContext): Promise<{ resources: Resource[]; nextCursor?: string }> {
      try {
        const page = await operate(runList, {}, { limit: 20, ...(cursor ? { cursor } : {}) }, ctx);
        const resources: Resource[] = [];
        for (const run of page.body.items as Array<{ id: string; ref: string; status: string }>) {
          const r = await operate(runResults, { run_id: run.id }, {}, ctx);
          resources.push({ uri: `silico://runs/${run.id}/results`, name: `results of run ${run.id}`, title: `${run.ref} (${run.status})`, mimeType: 'application/json' });
          for (const a of r.body.artifacts as Array<{ file_name: string; content_type: string; size_bytes: number; resource_uri: string | null }>) {
            if (a.resource_uri) resources.push({ uri: a.resource_uri, name: a.file_name, title: `${a.file_name} of run ${run.id}`, mimeType: a.content_type, size: a.size_bytes });
          }
        }
        const next = (page.body as { next_cursor?: string | null }).next_cursor;
        return { resources, ...(next ? { nextCursor: next } : {}) };
      } catch (err) {
        throw asMcpError(err, 'silico://runs', ctx.requestId);
      }
    },
  };
}

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { errorBody, errors, knownApiError } from '../errors.ts';
import { idempotent } from '../middleware/idempotency.ts';
import { authorizeCall, renderBody, runOperation } from '../operation.ts';
import type { Caller, Deps } from '../tools/tool.ts';
import { jsonBodySchema } from '../tools/tool.ts';
import { check } from '../validation.ts';
import { IDEMPOTENCY_ARGUMENT, type CatalogEntry } from './catalog.ts';

interface Parts { path: Record<string, unknown>; query: Record<string, unknown>; body: Record<string, unknown>; key?: string }

/** Puts each argument where its route would carry it, so each part is checked by its own schema. */
function splitArguments(entry: CatalogEntry, args: Record<string, unknown>): Parts {
  const { input } = entry.tool;
  const patterns = Object.keys(input.queryPatterns ?? {}).map((p) => new RegExp(p));
  const parts: Parts = { path: {}, query: {}, body: {} };
  const hasBody = Boolean(jsonBodySchema(entry.tool));
  for (const [k, v] of Object.entries(args)) {
    if (k === IDEMPOTENCY_ARGUMENT && entry.route.idempotency) {
      if (typeof v !== 'string') throw errors.validation('parameter_invalid_type', `${k} must be of type string.`, k);
      parts.key = v;
    } else if (input.path && k in input.path) parts.path[k] = v;
    else if ((input.query && k in input.query) || patterns.some((p) => p.test(k))) parts.query[k] = v;
    else if (hasBody) parts.body[k] = v;
    else throw errors.validation('parameter_unknown', `${k} is not a known parameter here.`, k);
  }
  return parts;
}

/** Query values as REST receives them (text), so a key means the same request through either door. */
function asQueryText(query: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(query).map(([k, v]) => [k, Array.isArray(v) ? v.map(String) : String(v)]));
}

export function toolResult(body: unknown, isError: boolean): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body as Record<string, unknown>, ...(isError ? { isError: true } : {}) };
}

/** What a tool call answers: the route's status and body (the success or error envelope). */
export interface ToolAnswer { status: number; body: Record<string, unknown> }

export interface CallContext {
  deps: Deps; caller: Caller; requestId: string; log?: Logger;
  /** How long the operation may wait for a workflow's result (ToolContext.waitMs). */
  waitMs?: number;
  /** The key's count today as the request's rate limiter counted it (ToolContext.requestsToday). */
  requestsToday?: () => Promise<number>;
}

/**
 * One call of a tool, as its route would answer it: the same scope and gateway rule,
 * validation, idempotency and operation, and the same envelope on success or refusal.
 */
export async function answerTool(entry: CatalogEntry, args: Record<string, unknown>, ctx: CallContext): Promise<ToolAnswer> {
  const { route, tool, compiled } = entry;
  try {
    authorizeCall(ctx.caller, route, tool);
    const parts = splitArguments(entry, { ...tool.agentDefaults, ...args });
    check(compiled.path, parts.path);
    const queryText = asQueryText(parts.query);
    check(compiled.query, parts.query);
    if (jsonBodySchema(tool)) check(compiled.body, parts.body);
    const input = { ...parts.body, ...parts.query, ...parts.path };
    const answer = await idempotent(ctx.deps.db, route, ctx.deps.config.limits, {
      accountId: ctx.caller.account.id, key: parts.key, keyParam: IDEMPOTENCY_ARGUMENT, requestId: ctx.requestId,
      request: { path: parts.path, query: queryText, body: jsonBodySchema(tool) ? parts.body : null },
    }, async () => {
      const result = await runOperation(tool, input, { deps: ctx.deps, caller: ctx.caller, requestId: ctx.requestId, idempotencyKey: route.idempotency ? parts.key : undefined, waitMs: ctx.waitMs, requestsToday: ctx.requestsToday });
      if (result.raw) throw errors.internal('raw_result', `${tool.name} answered bytes, which only its REST route can carry.`);
      return { status: route.success, body: renderBody(route, result, ctx.requestId) };
    });
    return { status: answer.status, body: answer.body as Record<string, unknown> };
  } catch (raw) {
    let err = knownApiError(raw);
    if (!err) {
      ctx.log?.error({ err: raw, tool: tool.name }, 'unhandled error in tool call');
      err = errors.internal();
    } else if (err.status >= 500) {
      ctx.log?.error({ err: raw, tool: tool.name, code: err.code }, 'server error in tool call');
    }
    return { status: err.status, body: errorBody(err, ctx.requestId, Boolean(route.gateway)) };
  }
}

/**
 * One `tools/call`: the route's answer as `structuredContent` (and as text for clients
 * that read only content). Errors are `isError` results carrying the spec's error envelope.
 */
export async function callTool(entry: CatalogEntry, args: Record<string, unknown>, ctx: CallContext): Promise<CallToolResult> {
  const answer = await answerTool(entry, args, ctx);
  return toolResult(answer.body, answer.status >= 400);
}

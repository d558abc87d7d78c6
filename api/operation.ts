import type { RouteDef } from './routeTable.ts';
import type { Caller, Deps, ToolContext, ToolDef, ToolResult } from './tools/tool.ts';
import { errors } from './errors.ts';
import { successEnvelope } from './envelope.ts';

/**
 * The steps every call of an operation takes, whichever door it came through (REST
 * route or MCP tool): the same scope and gateway rule, the same 501 while it is not
 * built, the same body.
 */

/** 403 `insufficient_scope` unless the key holds the tool's scope; then the gateway rule. */
export function authorizeCall(caller: Caller, route: RouteDef, tool: ToolDef): void {
  if (tool.scope !== 'any' && !caller.key.scopes.includes(tool.scope)) throw errors.insufficientScope(tool.scope);
  if (route.gateway && !caller.account.gateway_enabled) throw errors.gatewayNotEnabled();
}

/** Runs the operation, or answers 501 `not_implemented` while it is specified but not built. */
export async function runOperation(tool: ToolDef, input: Record<string, unknown>, ctx: ToolContext): Promise<ToolResult> {
  if (!tool.handler) throw errors.notImplemented(tool.name);
  return tool.handler(input, ctx);
}

/** The JSON body of a result: the envelope, or for the capability routes the plain object. */
export function renderBody(route: RouteDef, result: ToolResult, requestId: string): Record<string, unknown> {
  return route.plain ? Object.assign({}, result.body, { request_id: requestId }) : successEnvelope(result, requestId);
}

export type { Deps };

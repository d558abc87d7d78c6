import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RouteDef } from '../routeTable.ts';
import type { RouteTable } from '../router.ts';
import { jsonBodySchema, type ToolDef } from '../tools/tool.ts';
import { compileInput, type CompiledInput } from '../validation.ts';
import { errorEnvelope, type JsonSchema } from '../schemas/common.ts';
import { successSchema } from '../schemas/answer.ts';
import { TASK_KINDS } from './tasks/kinds.ts';

/** The argument that carries an Idempotency-Key over MCP, on the routes that take one. */
export const IDEMPOTENCY_ARGUMENT = 'idempotency_key';

/** One MCP tool: what `tools/list` shows, and what a call needs to run it like its route. */
export interface CatalogEntry {
  route: RouteDef;
  tool: ToolDef;
  compiled: CompiledInput;
  listing: Tool;
}

/**
 * MCP sees an operation's input as one object: the union of its path, query and body
 * schemas (the very schemas REST validates with), plus `idempotency_key` where the route
 * takes an Idempotency-Key. A body's one-of rule (e.g. plan or direct run) carries over.
 */
export function inputSchema(route: RouteDef, tool: ToolDef): Tool['inputSchema'] {
  const body = jsonBodySchema(tool) as { properties?: Record<string, JsonSchema>; required?: string[]; oneOf?: JsonSchema[] } | undefined;
  const properties: Record<string, JsonSchema> = { ...tool.input.path, ...tool.input.query, ...body?.properties };
  const required = [...Object.keys(tool.input.path ?? {}), ...(tool.input.requiredQuery ?? []), ...(body?.required ?? [])];
  if (route.idempotency) {
    properties[IDEMPOTENCY_ARGUMENT] = {
      type: 'string', minLength: 1, maxLength: 255,
      description: 'A unique key for this logical request; send the same key only when retrying the same arguments (the original result is returned).',
    };
    if (route.idempotency === 'required') required.push(IDEMPOTENCY_ARGUMENT);
  }
  return {
    type: 'object',
    properties,
    ...(required.length ? { required } : {}),
    additionalProperties: false,
    ...(tool.input.queryPatterns ? { patternProperties: tool.input.queryPatterns } : {}),
    ...(body?.oneOf ? { oneOf: body.oneOf } : {}),
  } as Tool['inputSchema'];
}

/** MCP annotations from the operation's own hints. */
function annotations(tool: ToolDef): NonNullable<Tool['annotations']> {
  return {
    readOnlyHint: tool.readOnly,
    idempotentHint: tool.readOnly || Boolean(tool.idempotent),
    destructiveHint: !tool.readOnly && Boolean(tool.destructive),
    openWorldHint: Boolean(tool.openWorld),
  };
}

/** Every route of the table that is a tool call (not a multipart upload or a byte stream). */
export function buildCatalog(table: RouteTable): ReadonlyMap<string, CatalogEntry> {
  const out = new Map<string, CatalogEntry>();
  for (const route of table.routes) {
    if (route.restOnly) continue;
    const tool = table.tools.get(route.tool);
    if (!tool) throw new Error(`route ${route.method} ${route.path} names unknown tool ${route.tool}`);
    const implemented = tool.handler ? '' : ' Not available on this server yet: answers the not_implemented error.';
    out.set(tool.name, {
      route, tool, compiled: compileInput(tool),
      listing: {
        name: tool.name,
        description: `${tool.description} (REST: ${route.method} /v1${route.path}; scope ${tool.scope === 'any' ? 'any valid API key' : tool.scope}.)${implemented}`,
        inputSchema: inputSchema(route, tool),
        // The same bodies the REST route answers, envelope included: its success, or the
        // error envelope of an `isError` result (clients validate structuredContent against it either way).
        outputSchema: { type: 'object', anyOf: [successSchema(tool, route), errorEnvelope] } as Tool['outputSchema'],
        annotations: annotations(tool),
        // Long work may be asked for as a task (tasks/get, tasks/result, tasks/cancel); without one the call answers as its route does.
        ...(tool.name in TASK_KINDS ? { execution: { taskSupport: 'optional' as const } } : {}),
      },
    });
  }
  return out;
}

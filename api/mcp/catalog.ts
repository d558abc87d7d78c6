import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { RouteDef } from '../routeTable.ts';
import type { RouteTable } from '../router.ts';
import { jsonBodySchema, type ToolDef } from '../tools/tool.ts';
import { compileInput, type CompiledInput } from '../validation.ts';
import type { JsonSchema } from '../schemas/common.ts';
import { TASK_KINDS } from './tasks/kinds.ts';

/**
 * What an agent's client can hold: MCP clients put every tool's definition into the
 * model's context, so the whole `tools/list` stays within this many bytes...
 */
export const MAX_TOOL_LIST_BYTES = 60 * 1024;

/** ... and a tool's default answer within this many (more is asked for: a page, a resource). */
export const MAX_ANSWER_BYTES = 16 * 1024;

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
  for (const [name, value] of Object.entries(tool.agentDefaults ?? {})) properties[name] = { ...properties[name], default: value };
  const required = [...Object.keys(tool.input.path ?? {}), ...(tool.input.requiredQuery ?? []), ...(body?.required ?? [])];
  if (route.idempotency) {
    properties[IDEMPOTENCY_ARGUMENT] = {
      type: 'string', minLength: 1, maxLength: 255,
      description: 'Unique per logical request; the same key retries the same call (its first answer returns).',
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

/**
 * MCP annotations from the operation's own hints, only where they differ from MCP's
 * defaults (not read-only, destructive, not idempotent, open world): a read-only tool's
 * other hints mean nothing, so they are left out.
 */
function annotations(tool: ToolDef): NonNullable<Tool['annotations']> {
  const closed = tool.openWorld ? {} : { openWorldHint: false };
  if (tool.readOnly) return { readOnlyHint: true, ...closed };
  return { ...(tool.destructive ? {} : { destructiveHint: false }), ...(tool.idempotent ? { idempotentHint: true } : {}), ...closed };
}

/**
 * The largest output schema a tool lists: a page's or a small answer's fields. A larger
 * answer's fields are many and nested, and an agent reads them from the answer itself.
 */
const MAX_OUTPUT_SCHEMA_BYTES = 256;

type Node = JsonSchema & { type?: string | string[]; properties?: Record<string, Node>; oneOf?: Node[]; anyOf?: Node[]; enum?: unknown[]; const?: unknown };

/** The JSON type(s) a schema allows, without its detail: `{}` where it does not say. */
function typeOnly(node: Node): JsonSchema {
  if (node.type) return { type: node.type };
  const alternatives = node.oneOf ?? node.anyOf;
  const values = node.enum ?? ('const' in node ? [node.const] : undefined);
  const types = new Set<string>();
  if (alternatives) for (const a of alternatives) for (const t of ([] as string[]).concat((typeOnly(a) as Node).type ?? [])) types.add(t);
  if (values) for (const v of values) types.add(v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'number' ? 'number' : typeof v);
  if (!types.size) return {};
  return { type: types.size === 1 ? [...types][0] : [...types] };
}

/**
 * What a tool answers, named at the top level only: each field of the operation's own
 * answer with its JSON type, nothing required and nothing closed (an error result's
 * envelope fits too). The whole schema is the route's in /v1/openapi.json; listed in full it
 * made `tools/list` too large for an agent's context.
 */
export function topLevelOutput(tool: ToolDef): Tool['outputSchema'] | undefined {
  const own = tool.output && tool.output !== 'bytes' ? (tool.output as Node) : undefined;
  if (!own?.properties) return undefined;
  const schema = { type: 'object', properties: Object.fromEntries(Object.entries(own.properties).map(([k, v]) => [k, typeOnly(v)])) } as Tool['outputSchema'];
  return JSON.stringify(schema).length <= MAX_OUTPUT_SCHEMA_BYTES ? schema : undefined;
}

/** Every route of the table that is a tool call (not a multipart upload or a byte stream). */
export function buildCatalog(table: RouteTable): ReadonlyMap<string, CatalogEntry> {
  const out = new Map<string, CatalogEntry>();
  for (const route of table.routes) {
    if (route.restOnly) continue;
    const tool = table.tools.get(route.tool);
    if (!tool) throw new Error(`route ${route.method} ${route.path} names unknown tool ${route.tool}`);
    const implemented = tool.handler ? '' : ' Not available on this server yet: answers the not_implemented error.';
    const output = topLevelOutput(tool);
    out.set(tool.name, {
      route, tool, compiled: compileInput(tool),
      listing: {
        name: tool.name,
        description: `${tool.description}${implemented}`,
        inputSchema: inputSchema(route, tool),
        ...(output ? { outputSchema: output } : {}),
        annotations: annotations(tool),
        // Long work may be asked for as a task (tasks/get, tasks/result, tasks/cancel); without one the call answers as its route does.
        ...(tool.name in TASK_KINDS ? { execution: { taskSupport: 'optional' as const } } : {}),
      },
    });
  }
  return out;
}

import type { RouteDef } from '../routeTable.ts';
import type { ToolDef } from '../tools/tool.ts';
import { envelopeFields, type JsonSchema } from './common.ts';

/**
 * A route's success body: the operation's own fields and the envelope's, as one object
 * (so an operation's strict schema, `additionalProperties: false`, holds for the whole
 * body). OpenAPI publishes it, MCP lists it as the tool's output schema, and the tests validate
 * every answer they receive against it.
 */
export function successSchema(tool: ToolDef, route: RouteDef): JsonSchema {
  const own = (tool.output && tool.output !== 'bytes' ? tool.output : { type: 'object' }) as JsonSchema & { properties?: Record<string, JsonSchema>; required?: string[] };
  const envelope = route.plain ? { request_id: envelopeFields.request_id } : envelopeFields;
  const required = route.plain ? [] : Object.keys(envelopeFields);
  if (own.type === 'object' && own.properties) {
    return { ...own, properties: { ...own.properties, ...envelope }, required: [...(own.required ?? []), ...required] };
  }
  return { allOf: [own, { type: 'object', properties: envelope, required }] };
}

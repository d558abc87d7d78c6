import type { NextStep, ToolResult } from './tools/tool.ts';
import { fillPath, routeOfTool } from './routeTable.ts';

export const SCHEMA_VERSION = '2026-11-01';

/** A next step with the REST route that performs it. */
export function nextAction(step: NextStep) {
  const route = routeOfTool(step.tool);
  return {
    tool: step.tool,
    description: step.description,
    arguments: step.arguments,
    http: route ? { method: route.method, path: `/v1${fillPath(route.path, step.arguments)}` } : { method: 'GET', path: '/v1/openapi.json' },
  };
}

/** The success envelope: the tool's fields at the top level plus the spec's envelope fields. */
export function successEnvelope(result: ToolResult, requestId: string): Record<string, unknown> {
  return {
    ...result.body,
    schema_version: SCHEMA_VERSION,
    request_id: requestId,
    warnings: result.warnings ?? [],
    next_actions: (result.next_actions ?? []).map(nextAction),
    links: result.links ?? {},
  };
}

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema, CancelTaskRequestSchema, CancelTaskResultSchema, CreateTaskResultSchema, GetTaskPayloadRequestSchema, GetTaskPayloadResultSchema,
  GetTaskRequestSchema, GetTaskResultSchema, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ListTasksRequestSchema, ListTasksResultSchema,
  ListToolsRequestSchema, ReadResourceRequestSchema, type CallToolResult, type CreateTaskResult,
} from '@modelcontextprotocol/sdk/types.js';

/** The service's MCP endpoint for a REST base URL (`https://host/v1` → `https://host/mcp`). */
export function mcpUrl(baseUrl: string): URL {
  const url = new URL(baseUrl);
  url.pathname = url.pathname.replace(/\/v1\/?$/, '') + '/mcp';
  return url;
}

/**
 * `silico mcp`: an MCP server on stdio for agents that launch tools as processes. It is
 * a bridge, not a second implementation: every list and call goes to the service's
 * /mcp endpoint (tools, resources and tasks) with the key from SILICO_API_KEY, so scopes, limits and the gateway rule
 * are the service's own. An HTTP-level refusal (401, 429, ...) comes back as an
 * `isError` result carrying the service's error envelope.
 */
export async function serveMcpOverStdio(opts: { baseUrl: string; apiKey: string; version: string }): Promise<void> {
  let lastRefusal: unknown;
  const remote = new Client({ name: 'silico-cli', version: opts.version });
  await remote.connect(new StreamableHTTPClientTransport(mcpUrl(opts.baseUrl), {
    requestInit: { headers: { Authorization: `Bearer ${opts.apiKey}` } },
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (!res.ok && res.headers.get('content-type')?.includes('application/json')) {
        lastRefusal = await res.clone().json().catch(() => undefined);
      }
      return res;
    },
  }));
  const server = new Server(
    { name: 'silico', version: opts.version },
    { capabilities: { tools: { listChanged: false }, resources: { listChanged: false }, tasks: remote.getServerCapabilities()?.tasks ?? {} }, instructions: remote.getInstructions() },
  );
  server.setRequestHandler(ListToolsRequestSchema, async (req) => remote.listTools(req.params));
  // Resources pass through as they are; a refusal is the service's MCP error (its code and envelope as data).
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async (req) => remote.listResourceTemplates(req.params));
  server.setRequestHandler(ListResourcesRequestSchema, async (req) => remote.listResources(req.params));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => remote.readResource(req.params));
  // Tasks too: the service keeps them, so a task started here is read by any client of it.
  server.setRequestHandler(GetTaskRequestSchema, async (req) => remote.request({ method: 'tasks/get', params: req.params }, GetTaskResultSchema));
  server.setRequestHandler(GetTaskPayloadRequestSchema, async (req) => remote.request({ method: 'tasks/result', params: req.params }, GetTaskPayloadResultSchema));
  server.setRequestHandler(CancelTaskRequestSchema, async (req) => remote.request({ method: 'tasks/cancel', params: req.params }, CancelTaskResultSchema));
  server.setRequestHandler(ListTasksRequestSchema, async (req) => remote.request({ method: 'tasks/list', params: req.params }, ListTasksResultSchema));
  server.setRequestHandler(CallToolRequestSchema, async (req): Promise<CallToolResult | CreateTaskResult> => {
    lastRefusal = undefined;
    if (req.params.task) return remote.request({ method: 'tools/call', params: req.params }, CreateTaskResultSchema);
    try {
      return (await remote.callTool(req.params)) as CallToolResult;
    } catch (err) {
      const body = (lastRefusal as { error?: unknown } | undefined)?.error
        ? lastRefusal as Record<string, unknown>
        : { error: { type: 'api_connection_error', code: 'connection_failed', message: (err as Error).message, param: null, details: {}, request_id: null } };
      return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body, isError: true };
    }
  });
  const stdio = new StdioServerTransport();
  stdio.onclose = () => void remote.close();
  await server.connect(stdio);
}

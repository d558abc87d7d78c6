import assert from 'node:assert/strict';
import { after } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import path from 'node:path';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { BASE_URL } from './helpers.ts';
import { REPO_ROOT } from '../deploy/local/paths.ts';

/**
 * Official MCP SDK clients of a test file, all closed after it: `http` over streamable
 * HTTP with a key, to the test stack's api or another replica's (`base`, its /v1 URL);
 * `stdio` through `silico mcp`, the CLI's bridge, as agents that launch tools as processes do.
 */
export function mcpClients() {
  const open: Client[] = [];
  after(async () => {
    await Promise.allSettled(open.map((c) => c.close()));
  });
  const connected = async (transport: StreamableHTTPClientTransport | StdioClientTransport) => {
    const c = new Client({ name: 'silico-test', version: '1.0.0' });
    await c.connect(transport);
    open.push(c);
    return c;
  };
  return {
    http: (key: string, base = BASE_URL) => connected(new StreamableHTTPClientTransport(new URL(base.replace(/\/v1$/, '/mcp')), { requestInit: { headers: { Authorization: `Bearer ${key}` } } })),
    stdio: (key: string) => connected(new StdioClientTransport({
      command: process.execPath,
      args: [path.join(REPO_ROOT, 'sdk/bin/silico.js'), 'mcp'],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SILICO_API_KEY: key, SILICO_BASE_URL: BASE_URL },
      stderr: 'inherit',
    })),
  };
}

/** The MCP error a request was refused with (it fails the test when the request succeeds). */
export async function mcpRefusal(p: Promise<unknown>): Promise<McpError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof McpError, String(err));
    return err;
  }
  throw new Error('expected the request to be refused');
}

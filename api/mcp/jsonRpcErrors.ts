import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';

interface Issue { path?: Array<string | number>; message?: string }

/** The zod issues an SDK message carries as JSON (after an optional prefix), or null. */
function issuesIn(message: string): Issue[] | null {
  const start = message.indexOf('[');
  if (start < 0) return null;
  try {
    const issues: unknown = JSON.parse(message.slice(start));
    return Array.isArray(issues) && issues.every((i) => i && typeof i === 'object' && 'message' in i) ? issues as Issue[] : null;
  } catch {
    return null;
  }
}

/**
 * The MCP SDK answers a request whose params do not fit the method's schema with -32603
 * (internal error) and zod's issues as pretty-printed JSON; JSON-RPC's code for it is
 * -32602 (invalid params), and a client shows the message as it is. So such an error leaves
 * as -32602 with one line: where and what, issue by issue.
 */
export function asJsonRpcError(message: JSONRPCMessage): JSONRPCMessage {
  if (!('error' in message) || !message.error) return message;
  const { code, message: text } = message.error;
  if (code !== ErrorCode.InternalError && code !== ErrorCode.InvalidParams) return message;
  const issues = issuesIn(text);
  if (!issues) return message;
  const said = issues.map((i) => `${i.path?.length ? i.path.join('.') : 'request'}: ${i.message}`).join('; ');
  return { ...message, error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${said}.` } };
}

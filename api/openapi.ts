import { ROUTES, type RouteDef } from './routeTable.ts';
import { TOOLS } from './tools/index.ts';
import { jsonBodySchema, type ToolDef } from './tools/tool.ts';
import { successSchema } from './schemas/answer.ts';
import { errorEnvelope, type JsonSchema } from './schemas/common.ts';
import { SCHEMA_VERSION } from './envelope.ts';
import { PREFER_WAIT_MAX_SECONDS } from './preferWait.ts';

const ERROR_RESPONSES: Record<string, string> = {
  400: 'Malformed request (invalid JSON, or a required Idempotency-Key is missing).',
  401: 'Missing, invalid, expired or revoked API key.',
  402: 'The balance cannot cover the maximum this reserves (`insufficient_credits`); nothing was accepted.',
  403: 'The key lacks the route scope (`insufficient_scope`), or managed operations are not enabled (`gateway_not_enabled`).',
  404: 'Not found, including records owned by another account (identical answer).',
  409: 'Plan or idempotency conflict.',
  413: 'The request body is too large.',
  415: 'The request body is not JSON.',
  422: 'The request failed validation; `code` and `param` name the problem.',
  429: 'Rate or daily fair-use limit reached; wait Retry-After seconds.',
  500: 'The service could not complete the request.',
  501: 'The operation is specified but not available on this server yet.',
  503: 'A dependency is unavailable; retry after Retry-After.',
};

function parameters(tool: ToolDef, route: RouteDef) {
  const out: JsonSchema[] = [];
  for (const [name, schema] of Object.entries(tool.input.path ?? {})) out.push({ name, in: 'path', required: true, schema });
  for (const [name, schema] of Object.entries(tool.input.query ?? {})) {
    const isArray = (schema as { type?: unknown }).type === 'array';
    out.push({ name, in: 'query', required: (tool.input.requiredQuery ?? []).includes(name), schema, ...(isArray ? { style: 'form', explode: true } : {}) });
  }
  if (route.idempotency) {
    out.push({
      name: 'Idempotency-Key', in: 'header', required: route.idempotency === 'required',
      description: 'A unique key per logical request; reuse it only when retrying the same payload. Kept 24 hours.',
      schema: { type: 'string', maxLength: 255 },
    });
  }
  if (route.preferWait) {
    out.push({
      name: 'Prefer', in: 'header', required: false,
      description: `\`wait=N\` (RFC 7240): answer once the work this starts has ended, or after N seconds (at most ${PREFER_WAIT_MAX_SECONDS}), whichever is first; the answer then carries \`Preference-Applied: wait=N\`. Other preferences are ignored.`,
      schema: { type: 'string', example: 'wait=30' },
    });
  }
  return out;
}


function responses(tool: ToolDef, route: RouteDef) {
  const binary = tool.output === 'bytes';
  const out: Record<string, unknown> = {
    [route.success]: {
      description: 'Success.',
      content: binary
        ? { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } }
        : { 'application/json': { schema: successSchema(tool, route) } },
    },
  };
  // The payment provider's route takes no key: its own refusals are a bad signature (400), a body too large, or buying not configured (501).
  const codes = route.signed ? ['400', '413', '429', '500', '501', '503'] : ['401', '403', '429', '500', '503'];
  if (route.signed) {
    for (const c of codes) out[c] = { $ref: `#/components/responses/E${c}` };
    return out;
  }
  if (!route.no422) codes.push('422');
  if (route.notFound) codes.push('404');
  // The routes that start metered work (the run bucket's) reserve its maximum first.
  if (route.bucket === 'runs') codes.push('402');
  if (route.idempotency || route.method !== 'GET') codes.push('400', '409');
  if (jsonBodySchema(tool)) codes.push('413', '415');
  // Buying answers 501 payments_not_configured on a server without a payment provider key.
  if (!tool.handler || route.group === 'purchases') codes.push('501');
  for (const c of codes.sort()) out[c] = { $ref: `#/components/responses/E${c}` };
  return out;
}

function requestBody(tool: ToolDef, route: RouteDef) {
  if (route.signed) {
    return { required: true, content: { 'application/json': { schema: { type: 'object', description: 'The provider\'s event exactly as it sent it: its signature covers these bytes.' } } } };
  }
  const body = tool.input.body;
  if (!body) return undefined;
  if (body === 'multipart') {
    return {
      required: true,
      content: { 'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } } } },
    };
  }
  return { required: true, content: { 'application/json': { schema: body } } };
}

/** The OpenAPI 3.1 document of every route of the spec, built from the route table. */
export function buildOpenApi(baseUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const tool = TOOLS.get(route.tool)!;
    const implemented = Boolean(tool.handler);
    const body = requestBody(tool, route);
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      operationId: tool.name,
      summary: tool.description.split('. ')[0]!.replace(/\.$/, ''),
      description: `${tool.description}\n\n${route.signed ? 'No API key: signed by the payment provider (`Stripe-Signature`).' : `Scope: \`${tool.scope === 'any' ? 'any valid API key' : tool.scope}\`.`}` +
        (route.gateway ? ' Requires managed operations (the agent gateway) for the account.' : '') +
        (implemented ? '' : '\n\n**Not implemented yet**: answers 501 `not_implemented`.') +
        (route.addition ? '\n\n**An addition to the spec**: this route is not in the service contract\'s route table.' : ''),
      tags: [route.group],
      security: route.signed ? [] : [{ apiKey: [] }],
      'x-required-scope': tool.scope,
      'x-mcp-tool': route.restOnly ? null : tool.name,
      'x-implemented': implemented,
      'x-gateway-required': Boolean(route.gateway),
      'x-spec-addition': Boolean(route.addition),
      parameters: parameters(tool, route),
      ...(body ? { requestBody: body } : {}),
      responses: responses(tool, route),
    };
  }
  const tags = [...new Set(ROUTES.map((r) => r.group))].map((name) => ({ name, description: `The ${name} routes.` }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Silico API',
      version: SCHEMA_VERSION,
      description: 'Managed simulation service for biology labs. Every route runs the MCP tool it names, for the API-key owner only, and returns the same envelope.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: baseUrl }],
    tags,
    paths,
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'Scoped API key: `Authorization: Bearer sk_...`.' } },
      schemas: { Error: errorEnvelope },
      responses: Object.fromEntries(Object.entries(ERROR_RESPONSES).map(([code, description]) => [
        `E${code}`,
        {
          description,
          headers: code === '429' || code === '503' || code === '409'
            ? { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } }
            : undefined,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
        },
      ])),
    },
  };
}

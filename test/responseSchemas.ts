import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { makeAjv } from '../kernel/ajv.ts';
import { ROUTES, type RouteDef } from '../api/routeTable.ts';
import { TOOLS } from '../api/tools/index.ts';
import { successSchema } from '../api/schemas/answer.ts';

/**
 * Every success the suite receives is held to its route's published schema (the one
 * /v1/openapi.json carries): a response that drifts from what the operation declares fails
 * the test that received it, whatever that test asserts.
 */
const ajv = makeAjv(false);
const matchers = ROUTES.map((route) => ({
  route,
  pattern: new RegExp(`^/v1${route.path.replace(/\{[^}]+\}/g, '[^/]+')}$`),
}));
const compiled = new Map<RouteDef, ValidateFunction>();
/** Where to keep every body received, one JSON line per response in `<tool>.jsonl` (to write schemas against). */
const RECORD_DIR = process.env.SILICO_RECORD_RESPONSES;

/** A route's success schema, compiled once. */
function validatorOf(route: RouteDef, tool: NonNullable<ReturnType<typeof TOOLS.get>>): ValidateFunction {
  let validate = compiled.get(route);
  if (!validate) compiled.set(route, (validate = ajv.compile(successSchema(tool, route))));
  return validate;
}

function routeOf(method: string, pathname: string): RouteDef | undefined {
  // A literal segment wins over a parameter (`/runs/plans` before `/runs/{run_id}`).
  const candidates = matchers.filter((m) => m.route.method === method && m.pattern.test(pathname));
  return candidates.sort((a, b) => b.route.path.split('{').length - a.route.path.split('{').length).pop()?.route;
}

/** Why `body` is not what the route answering `method url` declares, or null when it is (or no route is known). */
export function responseProblem(method: string, url: string, status: number, body: unknown): string | null {
  if (status < 200 || status >= 300 || body === undefined) return null;
  const pathname = new URL(url).pathname;
  const route = routeOf(method.toUpperCase(), pathname);
  const tool = route && TOOLS.get(route.tool);
  // A route that answers stored bytes answers them whatever they are (JSON included).
  if (!route || !tool || tool.output === 'bytes') return null;
  if (RECORD_DIR) {
    mkdirSync(RECORD_DIR, { recursive: true });
    appendFileSync(path.join(RECORD_DIR, `${route.tool}.jsonl`), `${JSON.stringify({ status, path: pathname, body })}\n`);
  }
  const validate = validatorOf(route, tool);
  if (validate(body)) return null;
  return `${method} ${pathname} answered outside its schema (${route.tool}): ${ajv.errorsText(validate.errors, { separator: '; ' })}`;
}

/** The MCP tools' input schemas, as `tools/list` shows them (imported once needed). */
let catalog: ReadonlyMap<string, { listing: { inputSchema: Record<string, any> } }> | undefined;
async function mcpCatalog() {
  if (!catalog) catalog = (await import('../api/mcp/catalog.ts')).buildCatalog({ routes: ROUTES, tools: TOOLS });
  return catalog;
}

/**
 * Why an answer's next steps cannot be followed as given: each names a tool and carries
 * every argument it requires (a value to choose is a `<choose: …>` placeholder) and none it
 * does not take. Steps to REST-only routes are held to their route's parameters.
 */
export async function nextActionProblems(where: string, body: unknown): Promise<string[]> {
  const steps = (body as { next_actions?: unknown })?.next_actions;
  if (!Array.isArray(steps)) return [];
  const tools = await mcpCatalog();
  const out: string[] = [];
  for (const step of steps as Array<{ tool: string; arguments: Record<string, unknown> }>) {
    const schema = tools.get(step.tool)?.listing.inputSchema;
    if (!schema) {
      if (!TOOLS.has(step.tool)) out.push(`${where}: a next step names ${step.tool}, which is no operation`);
      continue;
    }
    const given = Object.keys(step.arguments ?? {});
    const missing = (schema.required as string[] | undefined ?? []).filter((k) => !given.includes(k));
    const alternatives = (schema.oneOf as Array<{ required: string[] }> | undefined)?.map((a) => a.required) ?? [];
    if (alternatives.length && !alternatives.some((req) => req.every((k) => given.includes(k)))) missing.push(`one of ${alternatives.map((r) => r.join('+')).join(' or ')}`);
    const unknown = given.filter((k) => !(k in schema.properties) && !Object.keys(schema.patternProperties ?? {}).some((p) => new RegExp(p).test(k)));
    if (missing.length) out.push(`${where}: its next step ${step.tool} lacks ${missing.join(', ')}`);
    if (unknown.length) out.push(`${where}: its next step ${step.tool} takes no ${unknown.join(', ')}`);
  }
  return out;
}

/**
 * What is wrong with one POST /mcp exchange: each `tools/call` success is held to its
 * route's published schema (the MCP listing names only top-level fields), to the bound
 * of an agent's answer, and its next steps must be followable.
 */
export async function mcpProblems(request: unknown, response: unknown): Promise<string[]> {
  const { MAX_ANSWER_BYTES } = await import('../api/mcp/catalog.ts');
  const calls = new Map<unknown, string>();
  for (const m of ([] as unknown[]).concat(request)) {
    const msg = m as { id?: unknown; method?: string; params?: { name?: string; task?: unknown } };
    if (msg?.method === 'tools/call' && msg.params?.name && !msg.params.task) calls.set(msg.id, msg.params.name);
  }
  const out: string[] = [];
  for (const m of ([] as unknown[]).concat(response)) {
    const msg = m as { id?: unknown; result?: { structuredContent?: Record<string, unknown>; isError?: boolean } };
    const name = calls.get(msg?.id);
    const answer = msg?.result?.structuredContent;
    if (!name || !answer) continue;
    const bytes = Buffer.byteLength(JSON.stringify(answer));
    if (bytes > MAX_ANSWER_BYTES) out.push(`MCP ${name} answered ${bytes} bytes, over an agent's ${MAX_ANSWER_BYTES}`);
    if (msg.result!.isError) continue;
    const route = ROUTES.find((r) => r.tool === name);
    const tool = TOOLS.get(name);
    if (!route || !tool || tool.output === 'bytes') continue;
    const validate = validatorOf(route, tool);
    if (!validate(answer)) out.push(`MCP ${name} answered outside its schema: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
    out.push(...await nextActionProblems(`MCP ${name}`, answer));
  }
  return out;
}

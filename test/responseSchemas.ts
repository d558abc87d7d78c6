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
  let validate = compiled.get(route);
  if (!validate) compiled.set(route, (validate = ajv.compile(successSchema(tool, route))));
  if (validate(body)) return null;
  return `${method} ${pathname} answered outside its schema (${route.tool}): ${ajv.errorsText(validate.errors, { separator: '; ' })}`;
}

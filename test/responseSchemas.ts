import type { ValidateFunction } from 'ajv/dist/2020.js';
import { makeAjv } from '../kernel/ajv.ts';
import { ROUTES, type RouteDef } from '../api/routeTable.ts';
import { TOOLS } from '../api/tools/index.ts';
import { successSchema } from '../api/openapi.ts';

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

/** Why `body` is not what the route answering `method url` declares, or null when it is (or no route is known). */
export function responseProblem(method: string, url: string, status: number, body: unknown): string | null {
  if (status < 200 || status >= 300 || body === undefined) return null;
  const path = new URL(url).pathname;
  // A literal segment wins over a parameter (`/runs/plans` before `/runs/{run_id}`).
  const candidates = matchers.filter((m) => m.route.method === method && m.pattern.test(path));
  const found = candidates.sort((a, b) => b.route.path.split('{').length - a.route.path.split('{').length).pop();
  if (!found) return null;
  const tool = TOOLS.get(found.route.tool);
  if (!tool) return null;
  let validate = compiled.get(found.route);
  if (!validate) compiled.set(found.route, (validate = ajv.compile(successSchema(tool, found.route))));
  if (validate(body)) return null;
  return `${method} ${path} answered outside its schema (${found.route.tool}): ${ajv.errorsText(validate.errors, { separator: '; ' })}`;
}

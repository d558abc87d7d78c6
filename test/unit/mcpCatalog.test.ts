import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTES } from '../../api/routeTable.ts';
import { TOOLS } from '../../api/tools/index.ts';
import { jsonBodySchema } from '../../api/tools/tool.ts';
import { buildCatalog, MAX_TOOL_LIST_BYTES } from '../../api/mcp/catalog.ts';

const catalog = buildCatalog({ routes: ROUTES, tools: TOOLS });
const listing = [...catalog.values()].map((e) => e.listing);

test(`tools/list, every tool included, is within ${MAX_TOOL_LIST_BYTES} bytes an agent's client can hold`, () => {
  const bytes = Buffer.byteLength(JSON.stringify({ tools: listing }));
  assert.ok(bytes <= MAX_TOOL_LIST_BYTES, `tools/list is ${bytes} bytes`);
  assert.equal(listing.length, ROUTES.filter((r) => !r.restOnly).length, 'every route that is a tool call is listed');
});

test('each tool lists its whole input: every path, query and body field the route validates, with their constraints', () => {
  for (const { route, tool, listing: t } of catalog.values()) {
    assert.ok(t.description && t.description.length >= 20, `${t.name} says what it does`);
    const input = t.inputSchema as { properties: Record<string, Record<string, unknown>>; required?: string[] };
    const body = jsonBodySchema(tool) as { properties?: Record<string, Record<string, unknown>>; required?: string[] } | undefined;
    for (const [name, schema] of Object.entries({ ...tool.input.path, ...tool.input.query, ...body?.properties })) {
      const agentDefault = tool.agentDefaults && name in tool.agentDefaults ? { default: tool.agentDefaults[name] } : {};
      assert.deepEqual(input.properties[name], { ...schema, ...agentDefault }, `${t.name}.${name} is listed as the route validates it`);
    }
    for (const name of [...Object.keys(tool.input.path ?? {}), ...(body?.required ?? [])]) assert.ok(input.required?.includes(name), `${t.name} requires ${name}`);
    if (route.idempotency === 'required') assert.ok(input.required?.includes('idempotency_key'), `${t.name} requires its idempotency_key`);
  }
});

test('an output schema, where a tool lists one, is small and names top-level fields only, so an error envelope fits it too', () => {
  let listed = 0;
  for (const t of listing) {
    if (!t.outputSchema) continue;
    listed++;
    assert.ok(JSON.stringify(t.outputSchema).length <= 256, `${t.name}'s output schema is small`);
    assert.equal(t.outputSchema.required, undefined, `${t.name} requires nothing (an isError result is the error envelope)`);
    for (const [field, s] of Object.entries(t.outputSchema.properties ?? {})) {
      assert.deepEqual(Object.keys(s as object).filter((k) => k !== 'type'), [], `${t.name}.${field} is its type only`);
    }
  }
  assert.ok(listed >= 10, `pages and small answers list their fields (${listed} do)`);
  assert.deepEqual((catalog.get('run_list')!.listing.outputSchema as any).properties, { items: { type: 'array' }, has_more: { type: 'boolean' }, next_cursor: { type: ['string', 'null'] } });
});

test('an argument an agent would better leave out shows its MCP default, and REST keeps its own', () => {
  const get = catalog.get('experiment_get')!;
  assert.equal((get.listing.inputSchema as any).properties.include_runs.default, false);
  assert.equal((TOOLS.get('experiment_get')!.input.query!.include_runs as any).default, undefined, 'REST lists every run unless asked not to');
});

test('annotations say only what differs from MCP\'s defaults', () => {
  assert.deepEqual(catalog.get('run_get')!.listing.annotations, { readOnlyHint: true, openWorldHint: false });
  assert.deepEqual(catalog.get('run_cancel')!.listing.annotations, { idempotentHint: true, openWorldHint: false });
  assert.deepEqual(catalog.get('workspace_create')!.listing.annotations, { destructiveHint: false, openWorldHint: false });
  assert.deepEqual(catalog.get('biology_search')!.listing.annotations, { readOnlyHint: true });
});

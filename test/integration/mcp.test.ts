import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { BASE_URL, call, closeTestDb, newAccount, spawnApi } from '../helpers.ts';
import { CONTRACT_ROUTES } from '../contract.ts';
import { mcpClients } from '../mcpClients.ts';
import { MAX_TOOL_LIST_BYTES } from '../../api/mcp/catalog.ts';

after(closeTestDb);

const { http: httpClient, stdio: stdioClient } = mcpClients();
const MCP_URL = new URL(BASE_URL.replace(/\/v1$/, '/mcp'));

/** A tool's result envelope, with request_id set aside (it names each request). */
async function tool(client: Client, name: string, args: Record<string, unknown> = {}) {
  const res = await client.callTool({ name, arguments: args });
  const body = res.structuredContent as Record<string, any>;
  assert.ok(body, `${name} returned structuredContent`);
  assert.deepEqual(JSON.parse((res.content as Array<{ text: string }>)[0]!.text), body, 'text content is the same envelope');
  return { isError: Boolean(res.isError), body };
}

const withoutRequestId = (b: Record<string, any>) => {
  if (b.error) return { ...b, error: { ...b.error, request_id: undefined, details: { ...b.error.details, gateway_request_id: undefined } } };
  return { ...b, request_id: undefined };
};

const EXPECTED_TOOLS = CONTRACT_ROUTES.filter((r) => !r.rest_only).map((r) => r.tool).sort();

let key = '';
before(async () => {
  key = (await newAccount({ usd: 5 })).key;
});

test('over streamable HTTP, tools/list is exactly the route table\'s tools, with hints and REST schemas, within an agent\'s budget', async () => {
  const client = await httpClient(key);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
  assert.ok(!tools.some((t) => ['file_upload', 'file_content', 'run_artifact_download'].includes(t.name)));
  const byName = new Map(tools.map((t) => [t.name, t]));
  assert.deepEqual(byName.get('run_get')!.annotations, { readOnlyHint: true, openWorldHint: false });
  assert.equal(byName.get('run_cancel')!.annotations!.destructiveHint, undefined, 'destructive: MCP\'s default');
  assert.equal(byName.get('workspace_create')!.annotations!.destructiveHint, false);
  const listed = await fetch(MCP_URL, {
    method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
  });
  const bytes = Buffer.byteLength(await listed.text());
  assert.ok(bytes <= MAX_TOOL_LIST_BYTES, `tools/list answered ${bytes} bytes`);
  const create = byName.get('run_create')!.inputSchema as any;
  assert.ok(create.required.includes('idempotency_key'));
  assert.ok(create.properties.plan_id && create.properties.ref && create.oneOf, 'the body schema, its one-of rule and the key');
  assert.deepEqual((byName.get('run_get')!.inputSchema as any).required, ['run_id']);
  assert.match(client.getInstructions() ?? '', /prepare/);
});

test('run_prepare + run_create + run_get run a built-in lab to completion, and each envelope equals REST\'s', async () => {
  const client = await httpClient(key);
  const plan = await tool(client, 'run_prepare', { capability_ref: 'platform/microbial-growth@1.0.0', inputs: { growth_rate: 0.3 }, max_runtime_seconds: 120 });
  assert.equal(plan.isError, false, JSON.stringify(plan.body));
  assert.equal(plan.body.status, 'ready');
  for (const k of ['schema_version', 'request_id', 'warnings', 'next_actions', 'links']) assert.ok(k in plan.body, k);
  const idempotency_key = crypto.randomUUID();
  const created = await tool(client, 'run_create', { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256, idempotency_key });
  assert.equal(created.isError, false, JSON.stringify(created.body));
  const again = await tool(client, 'run_create', { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256, idempotency_key });
  assert.equal(again.body.id, created.body.id, 'the same key replays the same run');
  let run = created.body;
  const deadline = Date.now() + 120000;
  while (!['completed', 'failed', 'cancelled', 'timed_out'].includes(run.status)) {
    assert.ok(Date.now() < deadline, `run stayed ${run.status}`);
    await new Promise((r) => setTimeout(r, 300));
    run = (await tool(client, 'run_get', { run_id: created.body.id })).body;
  }
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  const rest = await call('GET', `/runs/${run.id}`, { key });
  assert.deepEqual(withoutRequestId(run), withoutRequestId(rest.body));
  const results = await tool(client, 'run_results', { run_id: run.id });
  assert.deepEqual(withoutRequestId(results.body), withoutRequestId((await call('GET', `/runs/${run.id}/results`, { key })).body));
  assert.ok(results.body.outputs.biomass > 0);
  const page = await tool(client, 'run_list', { limit: 5 });
  assert.ok(page.body.items.some((r: any) => r.id === run.id), 'typed arguments for query parameters');
});

test('errors are isError results carrying the same envelope as REST: scope, validation, not found', async () => {
  const readOnly = await newAccount({ scopes: ['hub:read'] });
  const client = await httpClient(readOnly.key);
  const scoped = await tool(client, 'run_list', {});
  assert.equal(scoped.isError, true);
  assert.equal(scoped.body.error.code, 'insufficient_scope');
  assert.deepEqual(withoutRequestId(scoped.body), withoutRequestId((await call('GET', '/runs', { key: readOnly.key })).body));

  const full = await httpClient(key);
  const cases: Array<[string, Record<string, unknown>, string, string, unknown?]> = [
    ['run_get', { run_id: 'nope' }, 'GET', '/runs/nope'],
    ['run_get', { run_id: crypto.randomUUID() }, 'GET', '/runs/00000000-0000-4000-8000-000000000000'],
    ['run_list', { limit: 0 }, 'GET', '/runs?limit=0'],
    ['run_list', { bogus: 1 }, 'GET', '/runs?bogus=1'],
    ['experiment_get', { experiment_id: 'exp_missing' }, 'GET', '/experiments/exp_missing'],
    ['session_completion_check', { session_id: 'ses_x' }, 'POST', '/sessions/ses_x/completion', {}],
    ['run_prepare', { capability_ref: 'platform/microbial-growth@1.0.0', inputs: { nope: 1 } }, 'POST', '/run-plans', { capability_ref: 'platform/microbial-growth@1.0.0', inputs: { nope: 1 } }],
    // An empty reference took the workspace branch with no ids: a 500 on both doors.
    ['run_prepare', { capability_ref: '' }, 'POST', '/run-plans', { capability_ref: '' }],
  ];
  for (const [name, args, method, route, body] of cases) {
    const viaMcp = await tool(full, name, args);
    const viaRest = await call(method, route, { key, body });
    assert.equal(viaMcp.isError, true, name);
    assert.equal(viaMcp.body.error.code, viaRest.body.error.code, `${name} ${JSON.stringify(args)}`);
    assert.equal(viaMcp.body.error.param, viaRest.body.error.param, `${name} ${JSON.stringify(args)}`);
    assert.equal(viaMcp.body.error.type, viaRest.body.error.type);
  }
  const missingKey = await tool(full, 'run_create', { ref: 'platform/microbial-growth' });
  assert.equal(missingKey.body.error.code, 'idempotency_key_required');
  assert.equal(missingKey.body.error.param, 'idempotency_key');
  // Over MCP the key is a JSON string: one the keys table cannot store is refused, not a 500.
  for (const bad of ['a\u0000b', 'a\ud800']) {
    const refused = await tool(full, 'run_create', { ref: 'platform/microbial-growth', idempotency_key: bad });
    assert.equal(refused.body.error.code, 'parameter_invalid_format', JSON.stringify(refused.body));
    assert.equal(refused.body.error.param, 'idempotency_key');
  }
  await assert.rejects(full.callTool({ name: 'file_upload', arguments: {} }), /Unknown tool/);

  const noGateway = await newAccount({ gateway: false, usd: 1 });
  const gated = await tool(await httpClient(noGateway.key), 'run_create', { ref: 'platform/microbial-growth', idempotency_key: crypto.randomUUID() });
  assert.equal(gated.body.error.code, 'gateway_not_enabled');
  assert.equal(gated.body.error.details.retryable, false, 'managed-lab details, as over REST');
});

test('/mcp shares the per-key rate limits with /v1: run-creating calls draw from the run bucket', async () => {
  const replica = await spawnApi({ SILICO_RATE_READS_PER_MIN: '50', SILICO_RATE_RUNS_PER_MIN: '1', SILICO_RATE_DAILY: '100' });
  try {
    const { key: k } = await newAccount({ usd: 1 });
    const client = await httpClient(k, replica.base);
    const args = { ref: 'platform/microbial-growth', inputs: {}, max_runtime_seconds: 30 };
    assert.equal((await tool(client, 'run_create', { ...args, idempotency_key: crypto.randomUUID() })).isError, false);
    await assert.rejects(client.callTool({ name: 'run_create', arguments: { ...args, idempotency_key: crypto.randomUUID() } }), /429|rate_limited/);
    assert.equal((await tool(client, 'account_get')).isError, false, 'reads have their own bucket');
    const rest = await call('POST', '/runs', { key: k, base: replica.base, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: args });
    assert.equal(rest.status, 429, 'the same bucket as REST');
    // A JSON-RPC batch draws a point per message: 60 reads in one request pass no limit of 50.
    const batch = Array.from({ length: 60 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'account_get', arguments: {} } }));
    const batched = await fetch(replica.base.replace(/\/v1$/, '/mcp'), {
      method: 'POST', body: JSON.stringify(batch),
      headers: { Authorization: `Bearer ${k}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    });
    assert.equal(batched.status, 429, (await batched.text()).slice(0, 300));
  } finally {
    await replica.stop();
  }
});

test('a JSON-RPC request whose params do not fit its method is -32602 with a one-line message; an unknown method -32601', async () => {
  const ask = async (message: Record<string, unknown>) => (await (await fetch(MCP_URL, {
    method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 7, ...message }),
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
  })).json()).error as { code: number; message: string };
  for (const [message, said] of [
    [{ method: 'initialize' }, /^Invalid params: params: .+\.$/],
    [{ method: 'tools/call', params: {} }, /params\.name: /],
    [{ method: 'resources/read', params: { uri: 5 } }, /params\.uri: /],
  ] as const) {
    const error = await ask(message);
    assert.equal(error.code, -32602, JSON.stringify(error));
    assert.match(error.message, said);
    assert.ok(!error.message.includes('\n'), `one line: ${error.message}`);
  }
  assert.equal((await ask({ method: 'no/such' })).code, -32601);
});

test('/mcp is behind the same Bearer auth: no key or a bad key is a 401 envelope; only POST is served', async () => {
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  for (const auth of [undefined, 'Bearer sk_notarealkeynotarealkey00']) {
    const res = await fetch(MCP_URL, { method: 'POST', headers: { ...headers, ...(auth ? { Authorization: auth } : {}) }, body: JSON.stringify(init) });
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /Bearer/);
    const body = await res.json();
    assert.equal(body.error.type, 'authentication_error');
  }
  const get = await fetch(MCP_URL, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  const ok = await fetch(MCP_URL, { method: 'POST', headers: { ...headers, Authorization: `Bearer ${key}` }, body: JSON.stringify(init) });
  assert.equal(ok.status, 200);
  assert.ok(ok.headers.get('ratelimit-limit'), 'rate-limit headers like /v1');
  assert.equal((await ok.json()).result.serverInfo.name, 'silico');
});

test('over stdio (`silico mcp`), the same tools, envelopes and resources, keyed by SILICO_API_KEY', async () => {
  const client = await stdioClient(key);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), EXPECTED_TOOLS);
  const account = await tool(client, 'account_get');
  assert.equal(account.isError, false);
  const restAccount = (await call('GET', '/account', { key })).body;
  // Each request counts: the REST call came one request later.
  assert.equal(restAccount.usage.requests_today.this_key, account.body.usage.requests_today.this_key + 1);
  const stable = (b: any) => ({ ...withoutRequestId(b), usage: { ...b.usage, requests_today: undefined } });
  assert.deepEqual(stable(account.body), stable(restAccount));
  const cap = await tool(client, 'capability_get', { namespace: 'platform', name: 'sir-epidemic' });
  assert.deepEqual(withoutRequestId(cap.body), withoutRequestId((await call('GET', '/capabilities/platform/sir-epidemic', { key })).body));
  // Resources pass through: the same templates, a release read as REST answers it, and the service's not-found.
  assert.deepEqual((await client.listResourceTemplates()).resourceTemplates, (await (await httpClient(key)).listResourceTemplates()).resourceTemplates);
  const release = (await client.readResource({ uri: `silico://hub/releases/${encodeURIComponent('platform/sir-epidemic@1.0.0')}` })).contents[0] as { text: string };
  assert.equal(JSON.parse(release.text).contract.ref, 'platform/sir-epidemic@1.0.0');
  await assert.rejects(client.readResource({ uri: 'silico://runs/00000000-0000-4000-8000-000000000000/results' }), (err: { code?: number }) => err.code === -32002);

  const readOnly = await newAccount({ scopes: ['hub:read'] });
  const limited = await stdioClient(readOnly.key);
  const refused = await tool(limited, 'run_prepare', { capability_ref: 'platform/sir-epidemic@1.0.0', inputs: {} });
  assert.equal(refused.isError, true);
  assert.equal(refused.body.error.code, 'insufficient_scope');
});

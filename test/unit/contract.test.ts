import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CONTRACT_DIR, CONTRACT_ROUTES, CONTRACT_RULES, routeKey } from '../contract.ts';
import { ROUTES } from '../../api/routeTable.ts';
import { TOOLS } from '../../api/tools/index.ts';
import { errorType } from '../../api/errors.ts';
import { loadConfig } from '../../kernel/config.ts';
import { READ_BOUND } from '../../api/boundedContent.ts';
import { PLAN_TTL_SECONDS } from '../../api/plans.ts';
import { limit } from '../../api/schemas/common.ts';
import { ADDED_SCOPES, SCOPES } from '../../storage/db/apiKeys.ts';

const prose = readFileSync(path.join(CONTRACT_DIR, 'service-api.md'), 'utf8');

test('routes.json states the prose contract\'s route tables: every route, its scope, tool and statuses', () => {
  // The spec's main table: method, path, scope, tool, success; and its index of routes given a purpose only.
  const table = [...prose.matchAll(/^\| (GET|POST|PATCH|PUT|DELETE) \| (\/[^ |]*) \| ([^|]+) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$/gm)];
  const index = [...prose.matchAll(/^\| (GET|POST|PATCH|PUT|DELETE) \| (\/[^ |]*) \| ([^|]+) \|$/gm)];
  assert.equal(table.length, 44, 'the spec\'s route table was read');
  assert.equal(index.length, 20, 'the spec\'s index of run and session routes was read');
  const byKey = new Map(CONTRACT_ROUTES.map((r) => [routeKey(r), r]));
  assert.equal(byKey.size, CONTRACT_ROUTES.length, 'no route is listed twice');
  for (const m of table) {
    const r = byKey.get(`${m[1]} ${m[2]}`);
    assert.ok(r, `${m[1]} ${m[2]} is in routes.json`);
    assert.equal(r.source, 'spec');
    assert.equal(r.scope, m[3]!.trim() === 'any valid API key' ? 'any' : m[3]!.trim(), `${routeKey(r)} scope`);
    const tool = m[4]!.trim();
    if (tool.startsWith('none')) assert.equal(r.tool_named_here, true, `${routeKey(r)}: the spec names no tool`);
    else assert.equal(r.tool, tool, `${routeKey(r)} tool`);
    const statuses = m[5]!.split(';').map((s) => Number(s.trim()));
    assert.equal(r.success, statuses[0], `${routeKey(r)} success`);
    assert.equal(r.not_found, statuses.includes(404) || r.not_found_decided_here === true, `${routeKey(r)} 404`);
    assert.equal(r.purpose, m[6]!.trim());
  }
  for (const m of index) {
    const r = byKey.get(`${m[1]} ${m[2]}`);
    assert.ok(r, `${m[1]} ${m[2]} is in routes.json`);
    assert.equal(r.source, 'spec_index');
    assert.equal(r.purpose, m[3]!.trim());
  }
  assert.equal(CONTRACT_ROUTES.filter((r) => r.source !== 'addition').length, 64);
  for (const r of CONTRACT_ROUTES) {
    const scopes = r.source === 'addition' ? [...CONTRACT_RULES.scopes, ...CONTRACT_RULES.added_scopes] : CONTRACT_RULES.scopes;
    assert.ok(r.scope === 'any' || scopes.includes(r.scope), `${routeKey(r)}: ${r.scope} is a scope`);
  }
  // The spec's conventions: which routes take Idempotency-Key, and which have no 422.
  assert.deepEqual(CONTRACT_ROUTES.filter((r) => r.source === 'spec' && r.no_422).map(routeKey).sort(), ['GET /account', 'GET /compute-profiles', 'GET /skills']);
  for (const [key, kind] of [['POST /runs', 'required'], ['POST /labs/{lab_id}/hosting-plans', 'required'], ['POST /hosted-invocation-plans', 'required'], ['POST /workspaces', 'optional'],
    ['POST /workspaces/{workspace_id}/change-plans', 'optional'], ['POST /experiment-plans', 'optional'], ['POST /publication-plans', 'optional']]) {
    assert.equal(byKey.get(key!)!.idempotency, kind, `${key} Idempotency-Key`);
  }
});

test('the route table in code is the contract\'s: the same routes, tools, scopes, statuses and rules', () => {
  assert.deepEqual(ROUTES.map(routeKey).sort(), CONTRACT_ROUTES.map(routeKey).sort());
  const code = new Map(ROUTES.map((r) => [routeKey(r), r]));
  for (const c of CONTRACT_ROUTES) {
    const r = code.get(routeKey(c))!;
    const k = routeKey(c);
    assert.equal(r.tool, c.tool, `${k} tool`);
    assert.equal(TOOLS.get(r.tool)?.scope, c.scope, `${k} scope`);
    assert.equal(r.success, c.success, `${k} success`);
    assert.equal(Boolean(r.notFound), c.not_found, `${k} 404`);
    assert.equal(r.idempotency, c.idempotency, `${k} Idempotency-Key`);
    assert.equal(Boolean(r.gateway), Boolean(c.gateway), `${k} gateway`);
    assert.equal(r.bucket, c.rate_bucket, `${k} rate bucket`);
    assert.equal(Boolean(r.restOnly), Boolean(c.rest_only), `${k} REST only`);
    assert.equal(Boolean(r.plain), Boolean(c.plain_body), `${k} plain body`);
    assert.equal(Boolean(r.no422), Boolean(c.no_422), `${k} 422`);
    assert.equal(Boolean(r.addition), c.source === 'addition', `${k} addition`);
    assert.equal(Boolean(r.signed), Boolean(c.signed), `${k} signed by the payment provider, not a key`);
    assert.equal(r.group, c.group, `${k} group`);
  }
});

test('scopes, error types and limits in code are the contract\'s', () => {
  assert.deepEqual([...SCOPES], CONTRACT_RULES.scopes);
  assert.deepEqual([...ADDED_SCOPES], CONTRACT_RULES.added_scopes);
  for (const [status, type] of Object.entries(CONTRACT_RULES.error_types)) assert.equal(errorType(Number(status)), type, `type of ${status}`);
  for (const e of CONTRACT_RULES.error_codes) assert.ok(CONTRACT_RULES.error_types[String(e.status)], `${e.code}: ${e.status} has a type`);
  const limits = loadConfig({ DATABASE_URL: 'postgres://unused', S3_ACCESS_KEY_ID: 'x', S3_SECRET_ACCESS_KEY: 'x', SILICO_SECRETS_KEY: Buffer.alloc(32).toString('base64') }).limits;
  const L = CONTRACT_RULES.limits;
  assert.equal(limits.readsPerMinute, L.reads_per_minute);
  assert.equal(limits.runCreationPerMinute, L.run_creation_per_minute);
  assert.equal(limits.dailyRequests, L.daily_requests);
  assert.equal(limits.concurrentRunsPerAccount, L.concurrent_runs_per_account);
  assert.equal(limits.pageDefault, L.page_default);
  assert.equal(limits.pageMax, L.page_max);
  assert.equal(limits.uploadBytes, L.upload_bytes);
  assert.equal(limits.idempotencyTtlSeconds, L.idempotency_key_ttl_seconds);
  assert.equal(limit.maximum, L.page_max);
  assert.equal(limit.default, L.page_default);
  assert.equal(READ_BOUND, L.bounded_content_bytes);
  assert.equal(PLAN_TTL_SECONDS, L.plan_expiry_seconds);
});

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { call, errorOf, closeTestDb, newAccount, testDb, refusedWithin } from '../helpers.ts';
import { fillPath } from '../../api/routeTable.ts';
import { CONTRACT_ROUTES, CONTRACT_RULES } from '../contract.ts';
import { revokeKey, SCOPES } from '../../storage/db/apiKeys.ts';

after(closeTestDb);

/** A request that reaches each route with syntactically valid path parameters. */
function concretePath(path: string): string {
  return fillPath(path, {
    namespace: 'platform', name: 'naming', reference: 'platform/x@1.0.0', lab_id: 'lab_x', workspace_id: '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d',
    experiment_id: 'exp_x', file_id: '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d', dataset_id: 'ds_x', invocation_id: 'inv_x', port: 'out',
    run_id: '7d1c6a52-3a43-4d8e-9c1a-1e0f4a1b2c3d', artifact_id: 'art_x', session_id: 'ses_x',
  });
}

test('401 for a missing, malformed, unknown, expired or revoked key, on every route', async () => {
  const expired = await newAccount({ expiresAt: new Date(Date.now() - 1000) });
  const revoked = await newAccount();
  await revokeKey(testDb(), revoked.keyId);
  const cases: Array<[string, string | null, Record<string, string>]> = [
    ['api_key_missing', null, {}],
    ['api_key_invalid', null, { Authorization: 'Basic dXNlcjpwYXNz' }],
    ['api_key_invalid', null, { Authorization: 'Bearer not-a-key' }],
    ['api_key_invalid', `sk_${'A'.repeat(43)}`, {}],
    ['api_key_expired', expired.key, {}],
    ['api_key_revoked', revoked.key, {}],
  ];
  assert.deepEqual([...new Set(cases.map((c) => c[0]))].sort(), [...CONTRACT_RULES.unauthenticated_codes].sort());
  for (const route of CONTRACT_ROUTES) {
    for (const [code, key, headers] of cases) {
      const res = await call(route.method, concretePath(route.path), { key, headers });
      if (route.signed) {
        // The payment provider's route takes no key: whatever key is sent, an unsigned body is refused for its signature.
        assert.equal(res.status, 400, `${route.method} ${route.path} ${code}`);
        assert.equal(errorOf(res).code, 'signature_invalid');
        continue;
      }
      assert.equal(res.status, 401, `${route.method} ${route.path} ${code}`);
      const e = errorOf(res);
      assert.equal(e.type, 'authentication_error');
      assert.equal(e.code, code, `${route.method} ${route.path}`);
      assert.match(res.headers.get('www-authenticate')!, /^Bearer/);
    }
  }
});

test('403 insufficient_scope on every scoped route for a key without that scope', async () => {
  for (const route of CONTRACT_ROUTES) {
    if (route.scope === 'any') continue;
    const { key } = await newAccount({ scopes: SCOPES.filter((s) => s !== route.scope) });
    const res = await call(route.method, concretePath(route.path), { key });
    assert.equal(res.status, 403, `${route.method} ${route.path}`);
    const e = errorOf(res);
    assert.equal(e.code, 'insufficient_scope');
    assert.equal(e.type, 'permission_error');
    assert.equal(e.details.required_scope, route.scope);
  }
});

test('routes that accept any valid key answer a key with no scopes', async () => {
  const { key } = await newAccount({ scopes: [] });
  for (const route of CONTRACT_ROUTES.filter((r) => r.scope === 'any' && !r.signed)) {
    const res = await call(route.method, concretePath(route.path), { key });
    assert.ok(res.status === 200 || res.status === 404, `${route.method} ${route.path}: ${res.status}`);
  }
});

test('403 gateway_not_enabled for operations that start compute, publish, change a lab or reach external sources; reads still work', async () => {
  const { key } = await newAccount({ gateway: false });
  const gated = CONTRACT_ROUTES.filter((r) => r.gateway);
  assert.ok(gated.some((r) => r.path === '/runs' && r.method === 'POST'));
  assert.ok(gated.some((r) => r.path === '/publications'));
  assert.ok(gated.some((r) => r.path === '/biology/fetch'));
  assert.ok(gated.some((r) => r.path === '/labs/{lab_id}/visibility'));
  for (const route of gated) {
    const res = await call(route.method, concretePath(route.path), { key, headers: { 'Idempotency-Key': crypto.randomUUID() } });
    assert.equal(res.status, 403, `${route.method} ${route.path}`);
    const e = errorOf(res);
    assert.equal(e.code, 'gateway_not_enabled');
    assert.equal(e.details.retryable, false);
  }
  const read = await call('GET', '/account', { key });
  assert.equal(read.status, 200);
  assert.equal(read.body.account.gateway_enabled, false);
});

test('GET /account describes namespace, kind, access, usage and holdings', async () => {
  const a = await newAccount({ usd: 12.5, scopes: ['runs:read', 'hub:read'] });
  const res = await call('GET', '/account', { key: a.key });
  assert.equal(res.status, 200);
  assert.equal(res.body.object, 'account');
  assert.equal(res.body.account.namespace, a.account.namespace);
  assert.equal(res.body.account.kind, 'personal');
  assert.deepEqual(res.body.access.scopes, ['runs:read', 'hub:read']);
  assert.equal(res.body.access.key_id, a.keyId);
  assert.equal(res.body.access.key_prefix, a.key.slice(0, 10));
  assert.deepEqual(res.body.holdings.compute, { available_usd: 12.5, reserved_usd: 0, spent_usd: 0 });
  assert.equal(res.body.usage.requests_today.this_key, 1);
  const again = await call('GET', '/account', { key: a.key });
  assert.equal(again.body.usage.requests_today.this_key, 2);
});

test('revoking or disabling takes effect within a second in a running api process, cached keys included', async () => {
  const a = await newAccount();
  assert.equal((await call('GET', '/account', { key: a.key })).status, 200);
  assert.equal((await call('GET', '/account', { key: a.key })).status, 200, 'now served from the key cache');
  await testDb()('accounts').where({ id: a.account.id }).update({ gateway_enabled: false });
  const gated = await refusedWithin(1000, () => call('POST', '/runs', { key: a.key, body: { ref: 'x/y' }, headers: { 'Idempotency-Key': crypto.randomUUID() } }), (r) => r.status === 403);
  assert.equal(errorOf(gated).code, 'gateway_not_enabled');
  await revokeKey(testDb(), a.keyId);
  const res = await refusedWithin(1000, () => call('GET', '/account', { key: a.key }), (r) => r.status === 401);
  assert.equal(errorOf(res).code, 'api_key_revoked');
});

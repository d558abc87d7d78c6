import { RuntimeJudge } from '../../api/workspaces/runtimeJudge.ts';
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { call, errorOf, closeTestDb, newAccount, testDb, testObjects } from '../helpers.ts';
import { createApp } from '../../api/app.ts';
import { loadConfig } from '../../kernel/config.ts';
import { createTemporalGateway } from '../../api/temporal.ts';
import { AUTH_CHANNEL, createKeyResolver } from '../../storage/db/keyCache.ts';
import { PROFILES_CHANNEL, createProfileResolver } from '../../storage/db/computeProfiles.ts';
import { RELEASES_CHANNEL, createReleaseResolver } from '../../storage/db/releases.ts';
import { createNotificationListener, type NotificationListener } from '../../storage/db/notifications.ts';
import { RUN_EVENTS_CHANNEL, createNoticeWatcher } from '../../storage/db/noticeWatch.ts';
import { INVOCATION_ENDINGS_CHANNEL } from '../../storage/db/hostedInvocations.ts';
import { createPgPool } from '../../storage/db/knex.ts';
import type { RouteDef } from '../../api/routeTable.ts';
import type { ToolDef } from '../../api/tools/tool.ts';
import { ApiError } from '../../api/errors.ts';
import { ROUTES } from '../../api/routeTable.ts';
import { TOOLS } from '../../api/tools/index.ts';
import { readRuntimeLock } from '../../storage/runtimePins.ts';

// The middleware is exercised through an app assembled by createApp with one extra
// operation that counts its executions, against the stack's real Postgres.
let executions = 0;
const probe: ToolDef = {
  name: 'probe_create', description: 'test operation', scope: 'runs:write', readOnly: false,
  input: { body: { type: 'object', properties: { n: { type: 'integer' }, fail: { enum: ['client', 'server'] }, delay_ms: { type: 'integer' } }, additionalProperties: false } },
  async handler(input) {
    executions += 1;
    await new Promise((r) => setTimeout(r, input.delay_ms ?? 0));
    if (input.fail === 'client') throw new ApiError(422, 'probe_refused', 'refused', 'fail');
    if (input.fail === 'server') throw new Error('boom');
    return { body: { object: 'probe', execution: executions, n: input.n ?? null } };
  },
};
const route: RouteDef = { method: 'POST', path: '/probes', tool: 'probe_create', group: 'test', success: 200, idempotency: 'required', bucket: 'runs' };
let server: Server;
let base: string;
const temporal = createTemporalGateway(loadConfig().temporal);
let listener: NotificationListener;
const pool = createPgPool(process.env.DATABASE_URL!, 4);

before(async () => {
  const config = { ...loadConfig(), logLevel: 'silent' };
  listener = await createNotificationListener(config.databaseUrl, [AUTH_CHANNEL, RUN_EVENTS_CHANNEL, INVOCATION_ENDINGS_CHANNEL, PROFILES_CHANNEL, RELEASES_CHANNEL]);
  const deps = { config, db: testDb(), pool, objects: testObjects(), directDownloads: null, payments: null, temporal, keys: createKeyResolver(testDb(), listener), profiles: createProfileResolver(testDb(), listener), releases: createReleaseResolver(testDb(), listener), runEvents: createNoticeWatcher(listener, RUN_EVENTS_CHANNEL), invocationEndings: createNoticeWatcher(listener, INVOCATION_ENDINGS_CHANNEL), runtimeLock: readRuntimeLock(), runtimeJudge: new RuntimeJudge(process.env.SILICO_PYTHON!) };
  const app = createApp(deps, { table: { routes: [...ROUTES, route], tools: new Map([...TOOLS, [probe.name, probe]]) } });
  server = createServer(app.koa.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(async () => {
  server?.close();
  await temporal.close();
  await listener?.close();
  await pool.end();
  await closeTestDb();
});

const post = (key: string, idem: string | null, body: unknown) =>
  call('POST', '/probes', { key, base, body, headers: idem === null ? {} : { 'Idempotency-Key': idem } });

test('no Idempotency-Key: 400 idempotency_key_required (also on the real POST /runs)', async () => {
  const { key } = await newAccount();
  const res = await post(key, null, { n: 1 });
  assert.equal(res.status, 400);
  assert.equal(errorOf(res).code, 'idempotency_key_required');
  assert.equal(errorOf(res).param, 'Idempotency-Key');
  const real = await call('POST', '/runs', { key, body: { ref: 'platform/x' } });
  assert.equal(real.status, 400);
  assert.equal(errorOf(real).code, 'idempotency_key_required');
});

test('20 concurrent requests with one key and one body: one execution; every answer names it or is 409 in progress', async () => {
  const { key } = await newAccount();
  const idem = crypto.randomUUID();
  const before = executions;
  const answers = await Promise.all(Array.from({ length: 20 }, () => post(key, idem, { n: 7, delay_ms: 300 })));
  assert.equal(executions - before, 1, 'exactly one execution');
  const ok = answers.filter((r) => r.status === 200);
  const busy = answers.filter((r) => r.status === 409);
  assert.equal(ok.length + busy.length, 20, answers.map((r) => r.status).join(','));
  assert.ok(ok.length >= 1);
  const execution = ok[0]!.body.execution;
  for (const r of ok) assert.equal(r.body.execution, execution);
  for (const r of busy) {
    assert.equal(errorOf(r).code, 'idempotency_in_progress');
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
  }
  const replay = await post(key, idem, { n: 7, delay_ms: 300 });
  assert.equal(replay.status, 200);
  assert.deepEqual(replay.body, ok[0]!.body, 'the stored response, byte for byte');
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.equal(executions - before, 1);
});

test('same key with a different body: 409 idempotency_conflict', async () => {
  const { key } = await newAccount();
  const idem = crypto.randomUUID();
  assert.equal((await post(key, idem, { n: 1 })).status, 200);
  const res = await post(key, idem, { n: 2 });
  assert.equal(res.status, 409);
  const e = errorOf(res);
  assert.equal(e.code, 'idempotency_conflict');
  assert.equal(e.type, 'conflict_error');
});

test('keys belong to one account: another account may use the same key', async () => {
  const [x, y] = [await newAccount(), await newAccount()];
  const idem = crypto.randomUUID();
  const rx = await post(x.key, idem, { n: 1 });
  const ry = await post(y.key, idem, { n: 2 });
  assert.equal(rx.status, 200);
  assert.equal(ry.status, 200);
  assert.notEqual(rx.body.execution, ry.body.execution);
});

test('client errors are stored and replayed; server errors free the key for a retry', async () => {
  const { key } = await newAccount();
  const k1 = crypto.randomUUID();
  const first = await post(key, k1, { fail: 'client' });
  assert.equal(first.status, 422);
  const n = executions;
  const again = await post(key, k1, { fail: 'client' });
  assert.equal(again.status, 422);
  assert.deepEqual(again.body, first.body);
  assert.equal(executions, n, 'replayed, not re-executed');

  const k2 = crypto.randomUUID();
  const boom = await post(key, k2, { fail: 'server' });
  assert.equal(boom.status, 500);
  assert.equal(errorOf(boom).code, 'internal_error');
  assert.doesNotMatch(boom.text, /boom|at .*\.ts/, 'no internals leak');
  const m = executions;
  const retry = await post(key, k2, { fail: 'server' });
  assert.equal(retry.status, 500);
  assert.equal(executions, m + 1, 'the retry ran again');
});

test('keys are kept 24 hours, then forgotten; a key longer than 255 characters is refused', async () => {
  const { key, account } = await newAccount();
  const idem = crypto.randomUUID();
  const first = await post(key, idem, { n: 1 });
  await testDb()('idempotency_keys').where({ account_id: account.id, key: idem }).update({ created_at: testDb().raw(`now() - interval '25 hours'`) });
  const later = await post(key, idem, { n: 2 });
  assert.equal(later.status, 200);
  assert.notEqual(later.body.execution, first.body.execution);
  const long = await post(key, 'k'.repeat(256), { n: 1 });
  assert.equal(long.status, 422);
  assert.equal(errorOf(long).param, 'Idempotency-Key');
});

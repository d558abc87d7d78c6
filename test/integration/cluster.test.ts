import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Stack } from '../../deploy/local/stack.ts';
import { startClusterStack } from '../clusterStack.ts';
import { createDb, type Db } from '../../storage/db/knex.ts';
import { revokeKey } from '../../storage/db/apiKeys.ts';
import { call, errorOf, newAccount, refusedWithin, TERMINAL_RUN, until, type Res } from '../helpers.ts';
import { chromium } from 'playwright-core';
import { browserExecutable } from '../browser/browser.ts';
import { listUrl, screenshot, shownText, temporalUiPage, workflowUrl } from '../browser/temporalUi.ts';

// The production topology (npm run start:cluster) on this machine: the Temporal server's
// services on Postgres, two api replicas behind HAProxy, two workers. Each property a
// deployment relies on with more than one replica, proved on it.

let stack: Stack;
let db: Db;
let cluster: Awaited<ReturnType<typeof startClusterStack>>;
const RUN = { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 60 };

before(async () => {
  cluster = await startClusterStack('cluster', {
    temporalUi: true,
    // Set here, not inherited from the test stack's environment: this suite's own limits.
    // Sandbox uids of its own too (the shared stack's workers take 61000 up): a uid is what
    // a sandbox's process count is kept against.
    serviceEnv: { LOG_LEVEL: 'warn', SILICO_RATE_READS_PER_MIN: '600', SILICO_RATE_RUNS_PER_MIN: '100000', SILICO_RATE_DAILY: '1000000', SILICO_DRAIN_MS: '2000',
      SILICO_SANDBOX_UID_BASE: '70000', SILICO_SANDBOX_UID_COUNT: '1000' },
  });
  stack = cluster.stack;
  db = createDb(stack.info.database_url, { poolMax: 2 });
}, { timeout: 1_200_000 }); // the first time on a machine, the Temporal server and its schema tool are built (minutes)

after(async () => {
  await db?.destroy();
  await cluster?.stop();
});

const balancer = () => stack.info.base_url;
const replica = (i: number) => `http://127.0.0.1:${stack.apis[i]!.port}/v1`;
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });

async function account(usd = 5) {
  return newAccount({ db, usd });
}

async function waitRun(key: string, id: string, ms = 180_000): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await call('GET', `/runs/${id}`, { key, base: balancer() });
    if (r.status === 200 && TERMINAL_RUN.includes(r.body.status)) return r.body;
    if (Date.now() > deadline) throw new Error(`run ${id} stayed ${r.body?.status}`);
    await new Promise((res) => setTimeout(res, 250));
  }
}

/** One reservation and one settlement per run, from the ledger. */
async function assertChargedOnce(ids: string[]): Promise<void> {
  const txns: Array<{ kind: string; ref: string }> = await db('ledger_txns').whereIn('ref', ids.map((id) => `run:${id}`)).select('kind', 'ref');
  for (const id of ids) {
    assert.equal(txns.filter((t) => t.ref === `run:${id}` && t.kind === 'reserve').length, 1, `one reservation of ${id}`);
    assert.equal(txns.filter((t) => t.ref === `run:${id}` && t.kind === 'settle').length, 1, `one settlement of ${id}`);
  }
}

/** A write a client makes as the SDK does: retried with its key on 502, 503, 504 or a lost connection. */
async function clientWrite(method: string, route: string, key: string, body: unknown): Promise<{ res: Res; errors: string[] }> {
  const headers = idem();
  const errors: string[] = [];
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await call(method, route, { key, body, headers, base: balancer() });
      // The same key still held by a request a killed replica never finished: 409 with
      // Retry-After until its lock lapses, and the retry then completes it (as the SDK does).
      const held = res.status === 409 && res.body?.error?.code === 'idempotency_in_progress';
      if ((![502, 503, 504].includes(res.status) && !held) || attempt >= 30) return { res, errors };
      const retryAfter = res.headers.get('retry-after');
      errors.push(held ? `409 idempotency_in_progress${retryAfter ? '' : ' without Retry-After'}` : res.status === 503 && retryAfter ? '503' : `${res.status}${retryAfter ? '' : ' without Retry-After'}`);
      await new Promise((r) => setTimeout(r, held && retryAfter ? Number(retryAfter) * 1000 : 500));
    } catch (err) {
      errors.push(`connection: ${(err as Error).message}`);
      if (attempt >= 30) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

test('the Temporal cluster persists to Postgres, visibility included: search attributes find a run', { timeout: 300_000 }, async () => {
  const a = await account();
  const started = await call('POST', '/runs', { key: a.key, headers: idem(), body: RUN, base: balancer() });
  assert.equal(started.status, 200, started.text);
  assert.equal((await waitRun(a.key, started.body.id)).status, 'completed');
  const { rows } = await db.raw(`SELECT count(*)::int AS n FROM pg_database WHERE datname IN ('temporal', 'temporal_visibility')`);
  assert.equal(rows[0].n, 2);
  // The api finds the run's workflow through the visibility store (SilicoAccount).
  const { Connection, Client } = await import('@temporalio/client');
  const connection = await Connection.connect({ address: stack.info.temporal_address });
  try {
    const found = [];
    for await (const wf of new Client({ connection }).workflow.list({ query: `SilicoAccount = "${a.account.id}"` })) found.push(wf.workflowId);
    assert.ok(found.includes(`run-${started.body.id}`), JSON.stringify(found));
  } finally {
    await connection.close();
  }
});

test('the cluster runs the Temporal UI: in a real browser its list shows an account\'s run with its summary, and the run\'s page its details', { timeout: 300_000 }, async () => {
  assert.ok(stack.info.temporal_ui_url, 'the UI server runs beside the cluster');
  const a = await account();
  const started = await call('POST', '/runs', { key: a.key, headers: idem(), body: RUN, base: balancer() });
  assert.equal(started.status, 200, started.text);
  assert.equal((await waitRun(a.key, started.body.id)).status, 'completed');
  const summary = `run of ${RUN.ref} on cpu-small for ${a.account.id}, $${started.body.credits_reserved} reserved`;
  const browser = await chromium.launch({ executablePath: await browserExecutable(), args: ['--no-sandbox'] });
  try {
    const page = await temporalUiPage(browser);
    await page.goto(listUrl(stack.info.temporal_ui_url!, `SilicoAccount = "${a.account.id}"`));
    const row = page.getByRole('row').filter({ hasText: `run-${started.body.id}` });
    await row.waitFor({ timeout: 30_000 });
    assert.ok((await row.innerText()).includes(summary), await row.innerText());
    await screenshot(page, 'temporal-ui-cluster-list');
    const { Connection, Client } = await import('@temporalio/client');
    const connection = await Connection.connect({ address: stack.info.temporal_address });
    const { runId } = await new Client({ connection }).workflow.getHandle(`run-${started.body.id}`).describe().finally(() => connection.close());
    await page.goto(workflowUrl(stack.info.temporal_ui_url!, `run-${started.body.id}`, runId));
    await until(30_000, async () => ((await shownText(page)).includes(`Run ${started.body.id} of account ${a.account.id}.`) ? true : undefined));
  } finally {
    await browser.close();
  }
});

test('rate limits hold across the replicas', async () => {
  const a = await account();
  const answers = await Promise.all(Array.from({ length: 620 }, (_, i) => call('GET', '/account', { key: a.key, base: replica(i % 2) })));
  assert.equal(answers.filter((r) => r.status === 200).length, 600, 'the read bucket is one, wherever the request lands');
  assert.equal(answers.filter((r) => r.status === 429).length, 20);
});

test('50 concurrent POST /runs with one Idempotency-Key over both replicas make one run', { timeout: 300_000 }, async () => {
  const a = await account();
  const headers = idem();
  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => call('POST', '/runs', { key: a.key, headers, body: RUN, base: replica(i % 2) })));
  const made = answers.filter((r) => r.status === 200);
  assert.ok(made.length >= 1, answers.map((r) => r.status).join(','));
  for (const r of answers.filter((x) => x.status !== 200)) assert.deepEqual([r.status, r.body.error.code], [409, 'idempotency_in_progress']);
  assert.equal(new Set(made.map((r) => r.body.id)).size, 1, 'every success names the same run');
  const runs = await db('runs').where({ account_id: a.account.id }).select('id');
  assert.equal(runs.length, 1);
  await waitRun(a.key, runs[0].id);
  await assertChargedOnce([runs[0].id]);
});

test('server-sent events resumed on the other replica with Last-Event-ID get exactly the missed events', { timeout: 300_000 }, async () => {
  const a = await account();
  const started = await call('POST', '/runs', { key: a.key, headers: idem(), body: RUN, base: replica(0) });
  const headers = { Authorization: `Bearer ${a.key}`, Accept: 'text/event-stream' };
  // A live stream on the first replica, dropped after its first two events.
  const first = new AbortController();
  const live = await fetch(`${replica(0)}/runs/${started.body.id}/events`, { headers, signal: first.signal });
  const seen: number[] = [];
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of live.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true });
    seen.splice(0, seen.length, ...[...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])));
    if (seen.length >= 2) break;
  }
  first.abort();
  const kept = seen.slice(0, 2);
  // Resumed on the other replica from the last id it saw: the rest, to the end, each once.
  const resumed = await fetch(`${replica(1)}/runs/${started.body.id}/events`, { headers: { ...headers, 'Last-Event-ID': String(kept.at(-1)) } });
  const rest = [...(await resumed.text()).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  await waitRun(a.key, started.body.id);
  const all = (await call('GET', `/runs/${started.body.id}/events?limit=1000`, { key: a.key, base: replica(0) })).body.items.map((e: any) => e.seq);
  assert.deepEqual([...kept, ...rest], all, 'every event once, none missed');
});

test('a key revoked is refused by both replicas within a second', async () => {
  const a = await account();
  for (const i of [0, 1]) assert.equal((await call('GET', '/account', { key: a.key, base: replica(i) })).status, 200, 'each replica has it cached');
  await revokeKey(db, a.keyId);
  const revokedAt = Date.now();
  for (const i of [0, 1]) {
    const res = await refusedWithin(1000, () => call('GET', '/account', { key: a.key, base: replica(i) }), (r) => r.status === 401, revokedAt);
    assert.equal(errorOf(res).code, 'api_key_revoked', `replica ${i + 1}`);
  }
});

test('killing an api replica under load loses no accepted request: reads are retried by the balancer, writes by their client with their key', { timeout: 300_000 }, async () => {
  const a = await account();
  const reader = await account();
  const victim = stack.apis[0]!;
  let stop = false;
  const reads: number[] = [];
  // Four readers around the kill, paced to stay inside the read bucket (600 a minute) for
  // those few seconds; they stop before the writes end, since a write caught in flight on
  // the killed replica holds its key until its lock lapses (a minute) and is retried.
  const readers = Array.from({ length: 4 }, async () => {
    while (!stop) {
      reads.push((await call('GET', '/account', { key: reader.key, base: balancer() })).status);
      await new Promise((r) => setTimeout(r, 60));
    }
  });
  const writes = Array.from({ length: 10 }, async (_, i) => {
    await new Promise((r) => setTimeout(r, i * 150));
    return clientWrite('POST', '/runs', a.key, RUN);
  });
  await new Promise((r) => setTimeout(r, 600));
  victim.proc.child.kill('SIGKILL');
  await victim.proc.exited;
  await new Promise((r) => setTimeout(r, 1500));
  stop = true;
  await Promise.all(readers);
  const written = await Promise.all(writes);
  assert.deepEqual([...new Set(reads)], [200], 'every read answered (the balancer retried the ones in flight)');
  for (const w of written) {
    assert.equal(w.res.status, 200, w.res.text);
    for (const e of w.errors) assert.ok(!e.includes('without Retry-After'), `a client was not told when to retry: ${e}`);
  }
  const ids = written.map((w) => w.res.body.id as string);
  assert.equal(new Set(ids).size, 10);
  assert.equal(Number((await db('runs').where({ account_id: a.account.id }).count({ n: '*' }))[0]!.n), 10, 'each write made exactly one run');
  for (const id of ids) assert.equal((await waitRun(a.key, id)).status, 'completed');
  await assertChargedOnce(ids);
  await victim.restart();
});

test('killing a worker mid-run still completes every run exactly once', { timeout: 300_000 }, async () => {
  const a = await account();
  const ids: string[] = [];
  for (let i = 0; i < 6; i++) ids.push((await call('POST', '/runs', { key: a.key, headers: idem(), body: { ...RUN, inputs: { growth_rate: 0.1 + i / 100 } }, base: balancer() })).body.id);
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    const running = await db('runs').whereIn('id', ids).where({ status: 'running' }).count({ n: '*' });
    if (Number(running[0]!.n) > 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const victim = stack.workers[0]!;
  victim.proc.child.kill('SIGKILL');
  await victim.proc.exited;
  for (const id of ids) assert.equal((await waitRun(a.key, id)).status, 'completed', id);
  await assertChargedOnce(ids);
  await victim.restart();
});

test('each worker answers its own probes: ready while every Temporal worker in it polls, as the Deployment\'s probes read them', { timeout: 30_000 }, async () => {
  for (const w of stack.workers) {
    const ready = await fetch(`http://127.0.0.1:${w.port}/readyz`);
    assert.equal(ready.status, 200, w.name);
    const body = await ready.json() as { status: string; workers: string[] };
    assert.equal(body.status, 'ready');
    // control, lone runs, two compute profiles, their two serving queues, and the host queue.
    assert.deepEqual(body.workers, Array(7).fill('RUNNING'));
    assert.equal((await fetch(`http://127.0.0.1:${w.port}/healthz`)).status, 200);
  }
});

test('a rolling restart of every api replica and worker under a steady load of runs: every run completes once, and the only client-visible error is 503 with Retry-After', { timeout: 600_000 }, async () => {
  const a = await account(20);
  let stop = false;
  const results: Array<Awaited<ReturnType<typeof clientWrite>>> = [];
  const load = (async () => {
    while (!stop) {
      results.push(await clientWrite('POST', '/runs', a.key, RUN));
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  for (const r of [...stack.apis, ...stack.workers]) {
    // One at a time: a graceful stop (SIGTERM drains), then its replacement, ready, before the next.
    r.proc.child.kill('SIGTERM');
    await r.proc.exited;
    await r.restart();
  }
  stop = true;
  await load;
  assert.ok(results.length >= 5, `${results.length} runs under the rollout`);
  for (const w of results) {
    assert.equal(w.res.status, 200, w.res.text);
    for (const e of w.errors) assert.equal(e, '503', `a client saw ${e}`);
  }
  const ids = results.map((w) => w.res.body.id as string);
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.equal((await waitRun(a.key, id)).status, 'completed', id);
  await assertChargedOnce(ids);
});

test('with no api replica in rotation the balancer itself answers 503 with Retry-After, in the error envelope', { timeout: 120_000 }, async () => {
  const a = await account(1);
  // A request that reached a frozen replica before the balancer noticed would wait for it: give up on it.
  const get = () => fetch(`${balancer()}/account`, { headers: { Authorization: `Bearer ${a.key}` }, signal: AbortSignal.timeout(2000) }).catch(() => ({ status: 0 }) as Response);
  // Frozen, not stopped: their health checks go unanswered and the balancer takes both out.
  for (const r of stack.apis) r.proc.child.kill('SIGSTOP');
  try {
    const res = await until(20_000, async () => {
      const r = await get();
      return r.status === 503 ? r : undefined;
    });
    assert.equal(res.headers.get('retry-after'), '1');
    const body = await res.json() as { error: { code: string; details: { retryable: boolean } } };
    assert.equal(body.error.code, 'service_unavailable');
    assert.equal(body.error.details.retryable, true);
  } finally {
    for (const r of stack.apis) r.proc.child.kill('SIGCONT');
  }
  await until(20_000, async () => ((await get()).status === 200 ? true : undefined));
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readlinkSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection, defaultPayloadConverter } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { Replica, Stack } from '../../deploy/local/stack.ts';
import { startClusterStack } from '../clusterStack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { createDb, type Db } from '../../storage/db/knex.ts';
import { createObjectStore, type ObjectStore } from '../../storage/objects.ts';
import { experimentWorkflowId } from '../../kernel/workflowNames.ts';
import { call, newAccount, TERMINAL_RUN } from '../helpers.ts';
import { labFileOperations } from '../labFiles.ts';

// Two worker machines of the cluster topology (deploy/local/machines.ts): each its own
// disk, scratch and caches, sharing only Temporal, Postgres and the object store. One
// study's batches spread over both; an environment built on one is taken from the object
// store by the other; a machine killed mid-study costs no run and no charge, and rejoins.
// CLUSTER_STUDY_RUNS sets the studies' size (a multiple of 5: Sobol' on three inputs).

const RUNS = Number(process.env.CLUSTER_STUDY_RUNS ?? 320);
const ISHIGAMI = path.join(REPO_ROOT, 'test/fixtures/labs/ishigami');
const PINNED = path.join(REPO_ROOT, 'test/fixtures/labs/pinned-runtime');
const PARAMETERS = ['x1', 'x2', 'x3'].map((input) => ({ input, low: -Math.PI, high: Math.PI }));

let stack: Stack;
let cluster: Awaited<ReturnType<typeof startClusterStack>>;
let db: Db;
let objects: ObjectStore;
let connection: Connection;
let temporalClient: Client;

before(async () => {
  cluster = await startClusterStack('cluster-studies', {
    // Statements per run are counted for the capacity model (docs/scaling.md).
    postgresSettings: ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'],
    // Sandbox uids of its own (the shared stack's take 61000 up, cluster.test.ts's 70000 up), split between the machines.
    serviceEnv: { LOG_LEVEL: 'warn', SILICO_RATE_READS_PER_MIN: '6000', SILICO_RATE_RUNS_PER_MIN: '100000', SILICO_RATE_DAILY: '1000000', SILICO_DRAIN_MS: '2000',
      SILICO_SANDBOX_UID_BASE: '72000', SILICO_SANDBOX_UID_COUNT: '1000' },
  });
  stack = cluster.stack;
  db = createDb(stack.info.database_url, { poolMax: 2 });
  await db.raw('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  objects = createObjectStore({ endpoint: stack.info.minio_endpoint, region: 'us-east-1', accessKeyId: stack.env.S3_ACCESS_KEY_ID!, secretAccessKey: stack.env.S3_SECRET_ACCESS_KEY!, bucket: 'silico' });
  connection = await Connection.connect({ address: stack.info.temporal_address });
  temporalClient = new Client({ connection });
}, { timeout: 1_200_000 });

after(async () => {
  await connection?.close();
  await db?.destroy();
  await cluster?.stop();
});

const base = () => stack.info.base_url;
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
const [one, two] = [() => stack.workers[0]!, () => stack.workers[1]!];

/** The machine a Temporal worker identity (`pid@hostname`) belongs to: each machine has its own host name. */
function machineOf(identity: string): string {
  const host = identity.slice(identity.indexOf('@') + 1);
  assert.match(host, /^worker-\d+$/, `a worker machine's identity: ${identity}`);
  return host;
}

async function workspace(key: string, title: string, dir: string) {
  const ws = (await call('POST', '/workspaces', { key, body: { title }, base: base() })).body;
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: ws.head_revision_id, operations: labFileOperations(dir) }, base: base() });
  assert.equal(change.body?.status, 'ready', change.text);
  const rev = await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 }, base: base() });
  assert.equal(rev.status, 200, rev.text);
  return { workspace_id: ws.workspace_id as string, revision_id: rev.body.revision_id as string };
}

/** A Sobol' study of the Ishigami function of `runs` runs, accepted; its id. */
async function startStudy(key: string, runs: number): Promise<string> {
  const ws = await workspace(key, 'Ishigami', ISHIGAMI);
  const plan = await call('POST', '/experiment-plans', { key, base: base(), body: {
    name: `Sobol' over two machines (${runs})`, lab: { ...ws, compute_profile_id: 'cpu-small', max_runtime_seconds: 5 },
    sensitivity: { parameters: PARAMETERS, outputs: [{ output: 'y', summary: 'value' }], method: 'sobol', base_sample: runs / 5, seed: 57 },
  } });
  assert.equal(plan.body?.status, 'ready', plan.text);
  assert.equal(plan.body.run_count, runs);
  const accepted = await call('POST', '/experiments', { key, headers: idem(), base: base(), body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(accepted.status, 200, accepted.text);
  return accepted.body.id;
}

/** Waits for a study's workflow to end, then for its record to say it completed. */
async function studyDone(key: string, id: string): Promise<void> {
  await temporalClient.workflow.getHandle(experimentWorkflowId(id)).result();
  const view = await call('GET', `/experiments/${id}`, { key, base: base() });
  assert.equal(view.body?.status, 'completed', view.text.slice(0, 2000));
}

interface Batch { machine: string; at: number; attempt: number; executed: string[] }

/**
 * Every batch of a study's workflow (its continued executions included) from Temporal's
 * histories: the machine that executed it last (the started event's worker identity), and
 * the runs it executed (those it was given, less those it gave back).
 */
async function batchesOf(experimentId: string): Promise<Batch[]> {
  const batches: Batch[] = [];
  let runId: string | undefined;
  for (;;) {
    const handle = temporalClient.workflow.getHandle(experimentWorkflowId(experimentId), runId);
    const events = (await handle.fetchHistory()).events ?? [];
    const given = new Map<string, string[]>();
    const started = new Map<string, temporal.api.history.v1.IHistoryEvent>();
    for (const e of events) {
      const id = String(e.eventId);
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === 'executeRuns') given.set(id, (defaultPayloadConverter.fromPayload(scheduled.input!.payloads![0]!) as { runIds: string[] }).runIds);
      if (e.activityTaskStartedEventAttributes) started.set(String(e.activityTaskStartedEventAttributes.scheduledEventId), e);
      const done = e.activityTaskCompletedEventAttributes;
      const ids = done && given.get(String(done.scheduledEventId));
      if (!done || !ids) continue;
      const { left } = defaultPayloadConverter.fromPayload(done.result!.payloads![0]!) as { left: string[] };
      const start = started.get(String(done.scheduledEventId))!;
      batches.push({
        machine: machineOf(start.activityTaskStartedEventAttributes!.identity!), attempt: start.activityTaskStartedEventAttributes!.attempt!,
        at: Number(start.eventTime!.seconds) * 1000 + Math.floor(start.eventTime!.nanos! / 1e6), executed: ids.slice(0, ids.length - left.length),
      });
    }
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
    if (!runId) return batches;
  }
}

/** Runs per machine from a study's batches. */
function perMachine(batches: Batch[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const b of batches) counts[b.machine] = (counts[b.machine] ?? 0) + b.executed.length;
  return counts;
}

/** Statements Postgres has executed, by database: the service's own and Temporal's (persistence and visibility). */
async function statements(): Promise<Record<'silico' | 'temporal', { calls: number; ms: number }>> {
  const { rows } = await db.raw(`SELECT d.datname, sum(s.calls)::bigint AS calls, sum(s.total_exec_time) AS ms FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid GROUP BY d.datname`);
  const of = (...names: string[]) => {
    const mine = rows.filter((r: { datname: string }) => names.includes(r.datname));
    return { calls: mine.reduce((n: number, r: { calls: string }) => n + Number(r.calls), 0), ms: mine.reduce((n: number, r: { ms: number }) => n + Number(r.ms), 0) };
  };
  return { silico: of('silico'), temporal: of('temporal', 'temporal_visibility') };
}

/** The service's statements by how often each ran, as pg_stat_statements counts them. */
async function serviceStatements(): Promise<Map<string, number>> {
  const { rows } = await db.raw(`SELECT left(regexp_replace(s.query, '\\s+', ' ', 'g'), 90) AS query, sum(s.calls)::bigint AS calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'silico' GROUP BY 1`);
  return new Map(rows.map((r: { query: string; calls: string }) => [r.query, Number(r.calls)]));
}

test('each worker machine sees its own scratch, environments and home at the paths both name, and not the other\'s disk', async () => {
  const names = await Promise.all(stack.workers.map(async (w) => {
    const pid = w.proc.child.pid!;
    const env = Object.fromEntries((await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    const seen = (p: string) => readdirSync(`/proc/${pid}/root${p}`);
    // Its scratch root is in its machine's tmp, as it sees it and as the host keeps that machine's disk.
    const own = (names: string[]) => names.filter((n) => n.startsWith('silico-worker-'));
    assert.deepEqual(own(seen(env.TMPDIR!)).map((n) => n.split('-')[2]), [String(pid)], env.TMPDIR);
    assert.deepEqual(own(readdirSync(path.join(w.machine!.root, 'tmp'))), own(seen(env.TMPDIR!)), `${w.name}'s scratch is on its own disk`);
    assert.deepEqual(seen(path.join(cluster.dataDir, 'machines')), [], 'no machine reaches the machines\' disks');
    // Mount and host-name namespaces of its own (its host name is what names it to Temporal: the tests below read it there).
    return [env.SILICO_ENVIRONMENTS_DIR, env.HOME, ...['mnt', 'uts'].map((ns) => readlinkSync(`/proc/${pid}/ns/${ns}`))];
  }));
  assert.deepEqual(names[0]!.slice(0, 2), names[1]!.slice(0, 2), 'the same paths on both, as one image names them');
  const ours = ['mnt', 'uts'].map((ns) => readlinkSync(`/proc/self/ns/${ns}`));
  for (const i of [2, 3]) assert.equal(new Set([ours[i - 2], ...names.map((n) => n[i])]).size, 3, 'each its own namespace, neither the host\'s');
});

test('one study\'s batches execute on both worker machines, each taking at least 30% of its runs', { timeout: 1_800_000 }, async () => {
  const a = await newAccount({ db, usd: Math.max(50, RUNS / 20) });
  const [pg0, objects0, each0] = [await statements(), (await objects.list('blobs/')).length, await serviceStatements()];
  const t0 = performance.now();
  const id = await startStudy(a.key, RUNS);
  await studyDone(a.key, id);
  const seconds = (performance.now() - t0) / 1000;
  const [pg1, objects1, each1] = [await statements(), (await objects.list('blobs/')).length, await serviceStatements()];
  const batches = await batchesOf(id);
  const executed = batches.flatMap((b) => b.executed);
  const runs = await db('runs').where({ experiment_id: id }).select('id', 'status');
  assert.equal(runs.length, RUNS);
  assert.deepEqual(runs.filter((r) => r.status !== 'completed'), []);
  assert.deepEqual([...executed].sort(), runs.map((r) => r.id).sort(), 'every run executed by exactly one batch');
  const counts = perMachine(batches);
  assert.deepEqual(Object.keys(counts).sort(), ['worker-1', 'worker-2']);
  for (const [machine, n] of Object.entries(counts)) assert.ok(n >= 0.3 * RUNS, `${machine} executed ${n} of ${RUNS}: ${JSON.stringify(counts)}`);
  const artifacts = Number((await db('run_artifacts').whereIn('run_id', runs.map((r) => r.id)).count({ n: '*' }))[0]!.n);
  console.log(`# ${RUNS} runs in ${seconds.toFixed(1)} s (${(RUNS / seconds).toFixed(1)} runs/s), accepted to analysed; ${batches.length} batches; per machine ${Object.entries(counts).map(([m, n]) => `${m} ${n} (${(n / seconds).toFixed(1)} runs/s)`).join(', ')}`);
  const per = (k: 'silico' | 'temporal') => `${((pg1[k].calls - pg0[k].calls) / RUNS).toFixed(1)} statements, ${((pg1[k].ms - pg0[k].ms) / RUNS).toFixed(2)} ms`;
  console.log(`# Postgres per run: service ${per('silico')}; Temporal ${per('temporal')}; artifacts per run ${(artifacts / RUNS).toFixed(1)}, new objects per run ${((objects1 - objects0) / RUNS).toFixed(2)}`);
  const most = [...each1].map(([q, n]) => [q, (n - (each0.get(q) ?? 0)) / RUNS] as const).sort((x, y) => y[1] - x[1]).slice(0, 10);
  console.log(`# the service's most frequent statements, per run:\n${most.map(([q, n]) => `#   ${n.toFixed(2).padStart(6)}  ${q}`).join('\n')}`);
});

/** Plans and runs a lab of a workspace; its run's record and its environment's progress events. */
async function runOnce(key: string, ws: { workspace_id: string; revision_id: string }, seed: number) {
  const plan = await call('POST', '/run-plans', { key, base: base(), body: { ...ws, inputs: {}, max_runtime_seconds: 300, seed } });
  assert.equal(plan.body?.status, 'ready', plan.text);
  const started = await call('POST', '/runs', { key, headers: idem(), base: base(), body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(started.status, 200, started.text);
  let run: any;
  for (const deadline = Date.now() + 600_000; !TERMINAL_RUN.includes(run?.status); await new Promise((r) => setTimeout(r, 500))) {
    assert.ok(Date.now() < deadline, `run ${started.body.id} stayed ${run?.status}`);
    run = (await call('GET', `/runs/${started.body.id}`, { key, base: base() })).body;
  }
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  const events = (await call('GET', `/runs/${run.id}/events?limit=200`, { key, base: base() })).body.items as any[];
  return { lock: plan.body.environment.lock_sha256 as string, builds: events.filter((e) => e.data?.phase === 'environment') };
}

/** Stops a machine's worker gracefully (it drains), for as long as `work` takes. */
async function withoutMachine<T>(w: Replica, work: () => Promise<T>): Promise<T> {
  w.proc.child.kill('SIGTERM');
  await w.proc.exited;
  try {
    return await work();
  } finally {
    await w.restart();
  }
}

test('an environment built on one machine is taken from the object store by the other, not built again', { timeout: 1_800_000 }, async () => {
  const a = await newAccount({ db, usd: 5 });
  const ws = await workspace(a.key, 'Pinned runtime', PINNED);
  const built = await withoutMachine(two(), () => runOnce(a.key, ws, 1));
  assert.deepEqual(built.builds.map((e) => e.data.status), ['building', 'built'], 'built on worker-1, the only machine up');
  // Shared in the background once built: its digest is written last.
  const archive = async () => (await objects.list(`environments/${built.lock}/`)).map((o) => o.key).sort();
  for (const deadline = Date.now() + 120_000; !(await archive()).some((k) => k.endsWith('.sha256'));) {
    assert.ok(Date.now() < deadline, 'the archive was never shared');
    await new Promise((r) => setTimeout(r, 500));
  }
  const shared = await archive();
  const taken = await withoutMachine(one(), () => runOnce(a.key, ws, 2));
  assert.equal(taken.lock, built.lock);
  assert.deepEqual(taken.builds, [], 'worker-2 built nothing: it took the archive');
  assert.deepEqual(await archive(), shared, 'one archive of one layout: both machines name their environments alike');
  // Each machine holds its own copy, on its own disk.
  const copies = [one(), two()].map((w) => statSync(path.join(w.machine!.environmentsDir, built.lock, 'bin', 'python'), { throwIfNoEntry: false }));
  assert.ok(copies[0] && copies[1], 'both machines hold the environment');
  assert.notEqual(statSync(path.join(one().machine!.environmentsDir, built.lock)).ino, statSync(path.join(two().machine!.environmentsDir, built.lock)).ino);
});

test('a worker machine SIGKILLed mid-study loses no run, runs none twice and charges nothing twice; the study completes on the survivor, and the machine rejoins once restarted', { timeout: 1_800_000 }, async () => {
  const a = await newAccount({ db, usd: Math.max(50, RUNS / 20) });
  const id = await startStudy(a.key, RUNS);
  const ended = async () => Number((await db('runs').where({ experiment_id: id }).whereIn('status', TERMINAL_RUN).count({ n: '*' }))[0]!.n);
  for (const deadline = Date.now() + 600_000; (await ended()) < RUNS / 4;) {
    assert.ok(Date.now() < deadline, 'the study never got a quarter through');
    await new Promise((r) => setTimeout(r, 100));
  }
  const victim = two();
  victim.proc.child.kill('SIGKILL');
  await victim.proc.exited;
  const killedAt = Date.now();
  const atKill = await ended();
  await studyDone(a.key, id);
  const runs = await db('runs').where({ experiment_id: id }).select('id', 'status', 'reserved_micros', 'settled_micros');
  assert.equal(runs.length, RUNS);
  assert.deepEqual(runs.filter((r) => r.status !== 'completed'), [], 'no run lost');
  // The study's one reservation, one settlement per run (each its share of it), and the account's books closed.
  const ledger = await db('ledger_txns').whereIn('ref', [`experiment:${id}`, ...runs.map((r) => `run:${r.id}`)]).select('ref', 'kind');
  assert.deepEqual(ledger.filter((t) => t.kind === 'reserve').map((t) => t.ref), [`experiment:${id}`], 'one reservation, the study\'s');
  const settled = ledger.filter((t) => t.kind === 'settle').map((t) => t.ref);
  assert.equal(settled.length, RUNS, 'one settlement per run');
  assert.equal(new Set(settled).size, RUNS, 'no run settled twice');
  const balance = await db('compute_balances').where({ account_id: a.account.id }).first('reserved_micros', 'spent_micros');
  assert.equal(Number(balance.reserved_micros), 0);
  assert.equal(Number(balance.spent_micros), runs.reduce((n, r) => n + Number(r.settled_micros), 0));
  // Each run ran to its end once: one running, one settled, one completed event. Only a
  // run the killed machine held at that moment started its lab a second time, on the
  // survivor: at most two a slot (deploy/worker.ts's COMPUTE_SLOTS, 2), the one whose lab
  // was running and the one before it whose ending was being written meanwhile
  // (activities/execution/batch.ts).
  const events = await db('run_events').whereIn('run_id', runs.map((r) => r.id)).select('run_id', db.raw(`
    count(*) FILTER (WHERE type = 'state_changed' AND data->>'status' = 'running')::int AS running,
    count(*) FILTER (WHERE type = 'state_changed' AND data->>'status' = 'completed')::int AS completed,
    count(*) FILTER (WHERE type = 'charge_settled')::int AS settled,
    count(*) FILTER (WHERE type = 'log' AND message LIKE 'Lab process started%')::int AS labs`)).groupBy('run_id');
  assert.equal(events.length, RUNS);
  for (const e of events) assert.deepEqual([e.running, e.completed, e.settled], [1, 1, 1], e.run_id);
  const again = events.filter((e) => e.labs !== 1);
  assert.ok(again.length <= 2 * 2 && again.every((e) => e.labs === 2), `labs started twice: ${JSON.stringify(again)}`);
  // What was left after the kill ran on the survivor.
  const batches = await batchesOf(id);
  const after = batches.filter((b) => b.at > killedAt + 1000);
  assert.ok(after.length > 0);
  assert.deepEqual([...new Set(after.map((b) => b.machine))], ['worker-1'], 'after the kill, only the survivor executes');
  console.log(`# killed ${victim.name} at ${atKill} of ${RUNS} runs ended; ${again.length} run(s) re-executed on the survivor; per machine ${JSON.stringify(perMachine(batches))}`);

  // Restarted, the machine takes work again.
  await victim.restart();
  const next = await startStudy(a.key, 80);
  await studyDone(a.key, next);
  const counts = perMachine(await batchesOf(next));
  assert.ok((counts['worker-2'] ?? 0) > 0, `the restarted machine took no run: ${JSON.stringify(counts)}`);
  console.log(`# after its restart, of 80 runs: ${JSON.stringify(counts)}`);
});

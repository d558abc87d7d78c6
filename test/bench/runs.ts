/**
 * `npm run bench:runs`: what our run orchestration costs over bare Temporal, as ratios
 * measured in one run.
 *
 * Ours: N runs through the API as an agent makes them, each `POST /run-plans` + `POST
 * /runs` of the approved plan, with `Prefer: wait` so it is answered once the run has
 * ended, as the SDK's client.run() asks (BENCH_FOLLOW set: answered at acceptance, then
 * the run's event stream followed until it closes, then `GET /runs/{id}`; BENCH_FLOW=direct:
 * one `POST /runs` in the direct form, as client.run() makes it): auth, rate limits, plan
 * digest, ledger reservation and settlement, the run's events, and runWorkflow's
 * activities. The lab execution is a no-op here (a compute profile served, in this
 * process, by an executeLab that returns at once): the platform, not Python. Baseline: N
 * bare workflows shaped like runWorkflow (three local activities around one normal
 * activity on another task queue, bareWorkflow.ts) on the same Temporal, started and
 * awaited by a client. Same concurrency. Three rounds, alternating which side goes first;
 * each prints its throughput ratio (ours/bare runs per second, goal >= 0.9) and median
 * latency ratio (ours/bare, goal <= 1.3) and the CPU per run of each process; the
 * medians of the rounds' ratios are printed last.
 *
 * Env: BENCH_RUNS (300), BENCH_CONCURRENCY (16), BENCH_FLOW, BENCH_FOLLOW, BENCH_POLL_MS (0: wait on the stream),
 * BENCH_TOPOLOGY (`single`: the dev server; `cluster`: the npm run start:cluster topology,
 * through its balancer), BENCH_PROFILE (a folder: instead of the rounds, one measured
 * batch of ours with the api's and worker's V8 CPU profiles and Postgres's
 * pg_stat_statements, reported per run).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import getPort, { portNumbers } from 'get-port';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, Runtime, DefaultLogger } from '@temporalio/worker';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { createDb } from '../../storage/db/knex.ts';
import { computeTaskQueue } from '../../kernel/workflowNames.ts';
import { cpuSample, cpuPerUnit } from './cpu.ts';
import { createHttpClient } from './httpClient.ts';
import { profilingSettings, monotonicMicros, resetStatements, statementReport, cpuProfileReport, processNames } from './profile.ts';
import { median, p95 } from './stats.ts';

const N = Number(process.env.BENCH_RUNS ?? 300);
const C = Number(process.env.BENCH_CONCURRENCY ?? 16);
const PROFILE = 'bench-noop';
// 0 (default): a client waits on the run's event stream (SSE), as the SDK does; > 0:
// it polls GET /runs/{id} this often instead, and that load is part of what is measured.
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 0);
const TOPOLOGY = process.env.BENCH_TOPOLOGY === 'cluster' ? 'cluster' : 'single';
// The SDK's way (client.run): POST /runs with `Prefer: wait`, answered once the run ended;
// BENCH_FOLLOW=1: the answer at acceptance, then the run followed (stream or polls).
const FOLLOW = Boolean(process.env.BENCH_FOLLOW);
const DIRECT = process.env.BENCH_FLOW === 'direct';
const WAIT_SECONDS = 20;
const ROUNDS = 3;
const PROFILE_DIR = process.env.BENCH_PROFILE ? path.resolve(process.env.BENCH_PROFILE) : undefined;
const profiling = PROFILE_DIR ? profilingSettings(PROFILE_DIR) : undefined;


/** Runs `n` jobs `c` at a time; returns each job's latency (ms) and the total seconds. */
async function pool(n: number, c: number, job: () => Promise<void>): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: c }, async () => {
    while (next < n) {
      next += 1;
      const t = performance.now();
      await job();
      latencies.push(performance.now() - t);
    }
  }));
  return { latencies, seconds: (performance.now() - t0) / 1000 };
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-runs-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  const workers: Worker[] = [];
  const running: Promise<void>[] = [];
  const clients: Array<{ close(): void }> = [];
  let profiled: { from: number; to: number } | undefined;
  try {
    // Temporal's cluster stores its ports as smallint: the frontend's below 32768.
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort({ port: portNumbers(20000, 32767) }), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({
      exitOnSignal: true, topology: TOPOLOGY, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`),
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', SILICO_CONCURRENT_RUNS: '100000', LOG_LEVEL: 'warn' },
      serviceNodeArgs: profiling?.serviceNodeArgs,
      postgresSettings: profiling?.postgresSettings,
    });
    const db = createDb(stack.info.database_url, { poolMax: 2 });
    await db('compute_profiles').insert({ id: PROFILE, title: 'bench no-op', kind: 'cpu', vcpus: 1, memory_mib: 256, gpu: null, price_per_second_micros: 1, max_runtime_seconds: 60, schedule_to_start_seconds: 60, sort: 99 });
    await db.destroy();

    const native = await NativeConnection.connect({ address: stack.info.temporal_address });
    // Ours: the no-op execution of a run. Baseline: its own queue, workflow and activities.
    workers.push(await Worker.create({ connection: native, taskQueue: computeTaskQueue(PROFILE), activities: { async executeLab() { return { status: 'completed', computeSeconds: 0.001, outputs: {} }; } }, maxConcurrentActivityTaskExecutions: 200 }));
    workers.push(await Worker.create({
      connection: native, taskQueue: 'bench-bare', workflowsPath: fileURLToPath(new URL('./bareWorkflow.ts', import.meta.url)),
      activities: { async step(n: number) { return n; } }, maxConcurrentActivityTaskExecutions: 200,
    }));
    workers.push(await Worker.create({ connection: native, taskQueue: 'bench-bare-compute', activities: { async step(n: number) { return n; } }, maxConcurrentActivityTaskExecutions: 200 }));
    running.push(...workers.map((w) => w.run()));
    const client = new Client({ connection: await Connection.connect({ address: stack.info.temporal_address }) });

    const http = createHttpClient(stack.info.base_url.replace('//localhost:', '//127.0.0.1:'), { Authorization: `Bearer ${stack.info.api_key}` });
    clients.push(http);
    const request = { capability_ref: 'platform/microbial-growth@1.0.0', inputs: {}, compute_profile_id: PROFILE, max_runtime_seconds: 60 };
    const ours = async () => {
      const approved = async () => {
        const plan = await http.json('POST', '/run-plans', request);
        return { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 };
      };
      const body = DIRECT ? { ref: request.capability_ref, inputs: {}, compute_profile: PROFILE, max_runtime_seconds: 60 } : await approved();
      const run = await http.json('POST', '/runs', body, { 'Idempotency-Key': crypto.randomUUID(), ...(FOLLOW ? {} : { Prefer: `wait=${WAIT_SECONDS}` }) });
      // As the SDK's client.run(): a run that ended within the wait is answered ended.
      if (run.status === 'completed') return;
      if (POLL_MS > 0) {
        for (;;) {
          const r = await http.json('GET', `/runs/${run.id}`);
          if (r.status === 'completed') return;
          if (['failed', 'cancelled', 'timed_out'].includes(r.status)) throw new Error(`run ${run.id} ${r.status}: ${JSON.stringify(r.error)}`);
          await new Promise((res) => setTimeout(res, POLL_MS));
        }
      }
      // As the SDK waits: follow the run's event stream, which the server closes after
      // the terminal event, then read the run once.
      await http.text(`/runs/${run.id}/events`, { Accept: 'text/event-stream' });
      const r = await http.json('GET', `/runs/${run.id}`);
      if (r.status !== 'completed') throw new Error(`run ${run.id} ${r.status}: ${JSON.stringify(r.error)}`);
    };
    const bare = async () => {
      await client.workflow.execute('bareWorkflow', { taskQueue: 'bench-bare', workflowId: `bare-${crypto.randomUUID()}` });
    };
    // Warm both paths, then measure them in rounds, alternating which goes first.
    await pool(20, 4, ours);
    await pool(20, 4, bare);
    if (PROFILE_DIR) {
      const pgDb = createDb(stack.info.database_url, { poolMax: 1 });
      await resetStatements(pgDb);
      const before = cpuSample(stack.supervisor);
      const from = monotonicMicros();
      const r = await pool(N, C, ours);
      const to = monotonicMicros();
      console.log(`profile: ${N} runs of ours, ${C} at a time, ${(N / r.seconds).toFixed(1)} runs/s, median ${median(r.latencies).toFixed(0)} ms`);
      console.log(`CPU ms per run: ${cpuPerUnit(before, cpuSample(stack.supervisor), N)}`);
      console.log(await statementReport(pgDb, N));
      await pgDb.destroy();
      // The services write their profiles as they exit: reported once the stack stopped.
      profiled = { from, to };
      return;
    }
    console.log(`${N} runs a side, ${C} at a time, ${TOPOLOGY} topology, ours ${DIRECT ? 'direct, ' : 'planned, '}${FOLLOW ? (POLL_MS > 0 ? `polling every ${POLL_MS} ms` : "following the event stream") : `answered ended (Prefer: wait=${WAIT_SECONDS})`}`);
    const throughput: number[] = [];
    const latency: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const sides = round % 2 ? [['ours', ours], ['baseline', bare]] as const : [['baseline', bare], ['ours', ours]] as const;
      const got: Record<string, { latencies: number[]; seconds: number }> = {};
      const cpu: Record<string, string> = {};
      for (const [name, job] of sides) {
        const before = cpuSample(stack.supervisor);
        got[name] = await pool(N, C, job);
        cpu[name] = cpuPerUnit(before, cpuSample(stack.supervisor), N);
      }
      const o = got.ours!;
      const b = got.baseline!;
      throughput.push((N / o.seconds) / (N / b.seconds));
      latency.push(median(o.latencies) / median(b.latencies));
      const row = (name: string, r: { latencies: number[]; seconds: number }) =>
        `  ${name.padEnd(9)} ${(N / r.seconds).toFixed(1).padStart(7)} runs/s   median ${median(r.latencies).toFixed(0).padStart(5)} ms   p95 ${p95(r.latencies).toFixed(0).padStart(5)} ms`;
      console.log(`round ${round} (${sides[0][0]} first): throughput ratio ${throughput.at(-1)!.toFixed(2)}, latency ratio ${latency.at(-1)!.toFixed(2)}`);
      console.log(row('ours', o));
      console.log(row('baseline', b));
      console.log(`  CPU ms per run, ours:     ${cpu.ours}`);
      console.log(`  CPU ms per run, baseline: ${cpu.baseline}`);
    }
    console.log(`median throughput ratio (ours/bare runs per second): ${median(throughput).toFixed(2)}  goal >= 0.9`);
    console.log(`median latency ratio (ours/bare median): ${median(latency).toFixed(2)}  goal <= 1.3`);
  } catch (err) {
    // Reported here: the exit in `finally` would end the process before a caller's catch.
    console.error(err);
    process.exitCode = 1;
  } finally {
    for (const c of clients) c.close();
    for (const w of workers) w.shutdown();
    await Promise.allSettled(running);
    const names = stack ? processNames(stack) : new Map<number, string>();
    await stack?.stop();
    if (profiled) console.log(await cpuProfileReport(PROFILE_DIR!, names, profiled, N));
    log.end();
    await rm(dir, { recursive: true, force: true });
    process.exit(process.exitCode ?? 0);
  }
}

void main();

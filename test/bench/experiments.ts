/**
 * `npm run bench:experiments`: what a study costs against running its runs one by one.
 *
 * Study: one 100-run study (10 arms x 10 replicates of a workspace revision) through
 * `POST /experiment-plans` + `POST /experiments`, then `GET /experiments/{id}` every
 * BENCH_POLL_MS until `completed_at` is set (every run ended, comparison CSV and chart
 * stored); the service keeps the account's concurrent-run limit in flight.
 * Lone: 100 runs of the same revision, each `POST /run-plans` + `POST /runs` + following
 * its event stream until it closes + `GET /runs/{id}`, submitted by the client keeping
 * exactly the account's limit in flight (a pool of that many). Not all at once: a run
 * over the limit waits for its slot by re-trying with a growing sleep (1, 2, 4... s,
 * workflows/run.ts), which would measure that backoff, not the platform, and flatter the
 * study; a client that refills a slot the moment a run ends is the best lone runs can do.
 *
 * The lab execution is a no-op (a compute profile served, in this process, by an
 * executeLab that returns at once, and by the worker's batch activity over that same
 * executeLab for the study's batches), so both sides measure orchestration only. Same stack,
 * same process, same account and limit (SILICO_CONCURRENT_RUNS = BENCH_CONCURRENCY).
 * A warm-up of each, then BENCH_ROUNDS rounds, alternating which side goes first; prints
 * per round the wall times and where they went (from the runs' own timestamps), and the
 * median ratio of wall times (study / lone) last; goal <= 1.10.
 *
 * Env: BENCH_CONCURRENCY (8), BENCH_ROUNDS (3), BENCH_POLL_MS (100).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { NativeConnection, Worker, Runtime, DefaultLogger } from '@temporalio/worker';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { createDb } from '../../storage/db/knex.ts';
import { computeTaskQueue } from '../../kernel/workflowNames.ts';
import { createBatchActivities } from '../../activities/execution/batch.ts';
import { cpuSample, cpuPerUnit } from './cpu.ts';
import { createHttpClient } from './httpClient.ts';
import { labWorkspace } from './labWorkspace.ts';
import { studyToEnd } from './studyToEnd.ts';
import { median } from './stats.ts';

const ARMS = 10;
const REPLICATES = 10;
const N = ARMS * REPLICATES;
const C = Number(process.env.BENCH_CONCURRENCY ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 100);
const PROFILE = 'bench-noop';
const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth');

type Http = ReturnType<typeof createHttpClient>;
type Db = ReturnType<typeof createDb>;
/** A run's timeline: accepted, given its slot (`running`), ended (settled). */
interface Timeline { created: number; running: number; ended: number }


/** A private workspace holding the fixture lab, at its first revision with the lab. */
async function workspace(http: Http): Promise<{ workspace_id: string; revision_id: string }> {
  const { workspace_id, revision_id } = await labWorkspace(http, LAB, 'bench studies');
  return { workspace_id, revision_id };
}

/** The runs' timelines from Postgres (the no-op execution records no started_at: the `running` event is the slot). */
async function timelines(db: Db, where: { experimentId?: string; runIds?: string[] }): Promise<Timeline[]> {
  const q = db('runs as r').select('r.created_at', 'r.finished_at', db.raw(
    `(SELECT e.at FROM run_events e WHERE e.run_id = r.id AND e.type = 'state_changed' AND e.data->>'status' = 'running' ORDER BY e.seq LIMIT 1) AS running_at`,
  ));
  const rows: Array<{ created_at: Date; finished_at: Date; running_at: Date }> = where.experimentId ? await q.where('r.experiment_id', where.experimentId) : await q.whereIn('r.id', where.runIds!);
  return rows.map((r) => ({ created: r.created_at.getTime(), running: r.running_at.getTime(), ended: r.finished_at.getTime() }));
}

/**
 * Where a side's wall time went: until the first `C` runs had their slots, the runs' own
 * median time from slot to settled end, the refill latency (the k-th run to end frees the
 * slot the (k+C)-th run takes: median of that gap), how full the slots were between the
 * first slot and the last end (mean runs holding a slot / C), and the tail after the last
 * run ended until the client saw the side done.
 */
function breakdown(t0: number, t1: number, runs: Timeline[]): string {
  const starts = runs.map((r) => r.running).sort((a, b) => a - b);
  const ends = runs.map((r) => r.ended).sort((a, b) => a - b);
  const refill = starts.slice(C).map((s, k) => s - ends[k]!);
  const busy = runs.reduce((sum, r) => sum + (r.ended - r.running), 0);
  const fill = busy / (ends.at(-1)! - starts[0]!) / C;
  return `first ${C} slots taken by +${(starts[C - 1]! - t0).toFixed(0)} ms, slot→end median ${median(runs.map((r) => r.ended - r.running)).toFixed(0)} ms, `
    + `refill median ${median(refill).toFixed(0)} ms (p90 ${[...refill].sort((a, b) => a - b)[Math.floor(refill.length * 0.9)]!.toFixed(0)}), `
    + `slots ${(fill * 100).toFixed(0)}% full, tail ${(t1 - ends.at(-1)!).toFixed(0)} ms`;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-studies-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  let http: Http | undefined;
  let db: Db | undefined;
  let workerDb: Db | undefined;
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({
      exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`),
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', SILICO_CONCURRENT_RUNS: String(C), LOG_LEVEL: 'warn' },
    });
    db = createDb(stack.info.database_url, { poolMax: 2 });
    await db('compute_profiles').insert({ id: PROFILE, title: 'bench no-op', kind: 'cpu', vcpus: 1, memory_mib: 256, gpu: null, price_per_second_micros: 1, max_runtime_seconds: 60, schedule_to_start_seconds: 60, sort: 99 });
    const native = await NativeConnection.connect({ address: stack.info.temporal_address });
    // The study's batches go through the worker's own batch activity, over the same no-op execution.
    const executeLab = async () => ({ status: 'completed' as const, computeSeconds: 0.001, outputs: {} });
    workerDb = createDb(stack.info.database_url, { poolMax: C + 2 });
    const batches = createBatchActivities({ db: workerDb, maxConcurrentRuns: C, executeRun: executeLab });
    worker = await Worker.create({ connection: native, taskQueue: computeTaskQueue(PROFILE), activities: { executeLab, ...batches }, maxConcurrentActivityTaskExecutions: 200 });
    running = worker.run();

    http = createHttpClient(stack.info.base_url.replace('//localhost:', '//127.0.0.1:'), { Authorization: `Bearer ${stack.info.api_key}` });
    const h = http;
    const pg = db;
    const ws = await workspace(h);
    const arm = { ...ws, compute_profile_id: PROFILE, max_runtime_seconds: 60 };

    /** One study of arms x replicates, from its plan until the client reads it completed. */
    const study = async (arms: number, replicates: number) => {
      const t0 = performance.now();
      const w0 = Date.now();
      const { id, done } = await studyToEnd(h, {
        name: 'bench', arms: Array.from({ length: arms }, (_, i) => ({ ...arm, label: `arm ${i}`, replicates, inputs: { growth_rate: 0.01 * (i + 1) } })),
      }, POLL_MS);
      const seconds = (performance.now() - t0) / 1000;
      if (done.run_totals.completed !== arms * replicates) throw new Error(`study ${id}: ${JSON.stringify(done.run_totals)}`);
      return { seconds, detail: breakdown(w0, w0 + seconds * 1000, await timelines(pg, { experimentId: id })) };
    };

    /** One lone run, as the SDK waits for it: plan, create, event stream to its end, read. */
    const lone = async (): Promise<string> => {
      const plan = await h.json('POST', '/run-plans', { ...arm, inputs: { growth_rate: 0.01 } });
      const run = await h.json('POST', '/runs', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
      await h.text(`/runs/${run.id}/events`, { Accept: 'text/event-stream' });
      const r = await h.json('GET', `/runs/${run.id}`);
      if (r.status !== 'completed') throw new Error(`run ${run.id} ${r.status}: ${JSON.stringify(r.error)}`);
      return run.id;
    };
    /** `n` lone runs, the client keeping `C` in flight. */
    const lones = async (n: number) => {
      const t0 = performance.now();
      const w0 = Date.now();
      const runs: string[] = [];
      let next = 0;
      await Promise.all(Array.from({ length: C }, async () => {
        while (next < n) {
          next += 1;
          runs.push(await lone());
        }
      }));
      const seconds = (performance.now() - t0) / 1000;
      return { seconds, detail: breakdown(w0, w0 + seconds * 1000, await timelines(pg, { runIds: runs })) };
    };

    await study(2, 5);
    await lones(10);
    console.log(`${N} runs (${ARMS} arms x ${REPLICATES} replicates) each way, ${C} in flight (the account's limit), no-op lab, study polled every ${POLL_MS} ms`);
    const ratios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const s0 = cpuSample(stack.supervisor);
      const first = round % 2 ? 'study' : 'lone';
      const a = first === 'study' ? await study(ARMS, REPLICATES) : await lones(N);
      const s1 = cpuSample(stack.supervisor);
      const b = first === 'study' ? await lones(N) : await study(ARMS, REPLICATES);
      const s2 = cpuSample(stack.supervisor);
      const [s, l] = first === 'study' ? [a, b] : [b, a];
      const [cpuStudy, cpuLone] = first === 'study' ? [cpuPerUnit(s0, s1, N), cpuPerUnit(s1, s2, N)] : [cpuPerUnit(s1, s2, N), cpuPerUnit(s0, s1, N)];
      ratios.push(s.seconds / l.seconds);
      console.log(`round ${round} (${first} first): study ${s.seconds.toFixed(2)} s, lone ${l.seconds.toFixed(2)} s, ratio ${(s.seconds / l.seconds).toFixed(3)}`);
      console.log(`  study: ${s.detail}`);
      console.log(`  lone:  ${l.detail}`);
      console.log(`  CPU ms per run, study: ${cpuStudy}`);
      console.log(`  CPU ms per run, lone:  ${cpuLone}`);
    }
    console.log(`wall-time ratio (study / lone, median of ${ROUNDS} rounds): ${median(ratios).toFixed(3)}  goal <= 1.10`);
  } catch (err) {
    // Reported here: the exit in `finally` would end the process before a caller's catch.
    console.error(err);
    process.exitCode = 1;
  } finally {
    http?.close();
    worker?.shutdown();
    await running?.catch(() => undefined);
    await db?.destroy();
    await workerDb?.destroy();
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
    process.exit(process.exitCode ?? 0);
  }
}

void main();

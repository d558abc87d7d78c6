/**
 * `npm run bench:invocations`: what hosting buys. The latency of one invocation of a
 * ready deployment (warm instances) against a cold `POST /runs` of the same release,
 * same inputs, same stack, same client.
 *
 * Warm: `POST /hosted-invocation-plans` (the approval, made beforehand and not timed:
 * its median is printed apart), then from `POST /hosted-invocations` with `Prefer:
 * wait=60` until its answer shows it ended (should it not, `GET /hosted-invocations/{id}`
 * every BENCH_POLL_MS until one does). Cold: `POST /runs` (the direct form: prepared and
 * executed in one step) with `Prefer: wait=60`, followed the same way. As the SDK's
 * `invoke()` and `run()` do. Both run the real lab (test/fixtures/labs/
 * noisy-growth) sandboxed: the cold run starts a sandbox and an interpreter, imports
 * the runtime and prepares the package; the invocation forks an instance that has done
 * the first three already. One at a time, so each is measured alone.
 *
 * A warm-up of each, then BENCH_ROUNDS rounds of BENCH_N of each, alternating which side
 * goes first; per round the median latency of each; the median of the rounds' ratios
 * (warm / cold) is printed last; goal <= 0.25.
 *
 * Each round also times the floor: a warm instance of the same package started by the
 * bench itself (same code, sandbox and limits as a worker's) and invoked directly, no
 * HTTP and no Temporal; warm / floor is printed last (goal <= 2, or a warm median <= 40 ms).
 *
 * Each round also prints the CPU each stack process spent per warm invocation and per cold
 * run (from /proc; a process's sandboxed children included), and the bench's own.
 *
 * Then BENCH_CALLERS (8) callers invoke at once, BENCH_N each, on a deployment of as
 * many instances: their p99 against their median is printed (goal <= 3).
 *
 * Env: BENCH_N (10), BENCH_ROUNDS (3), BENCH_POLL_MS (20), BENCH_CALLERS (8), BENCH_PROFILE
 * (a folder: instead of the rounds, 3 × BENCH_N warm invocations with the api's and the
 * worker's V8 CPU profiles and Postgres's pg_stat_statements, reported per invocation).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import protoPkg from '@temporalio/proto';

const { EventType } = protoPkg.temporal.api.enums.v1;
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { createHttpClient } from './httpClient.ts';
import { mkdir, writeFile } from 'node:fs/promises';
import { loadConfig } from '../../kernel/config.ts';
import { createDb } from '../../storage/db/knex.ts';
import { getComputeProfile } from '../../storage/db/computeProfiles.ts';
import { createObjectStore } from '../../storage/objects.ts';
import { createSandbox } from '../../activities/execution/sandbox.ts';
import { labEnv, runLimits } from '../../activities/execution/labSpec.ts';
import { startWarmInstance } from '../../activities/execution/warmInstance.ts';
import { labWorkspace } from './labWorkspace.ts';
import { median, p99 } from './stats.ts';
import { cpuPerUnit, cpuSample } from './cpu.ts';
import { profilingSettings, monotonicMicros, resetStatements, statementReport, cpuProfileReport, processNames } from './profile.ts';

const N = Number(process.env.BENCH_N ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 20);
const CALLERS = Number(process.env.BENCH_CALLERS ?? 8);
const PROFILE_DIR = process.env.BENCH_PROFILE ? path.resolve(process.env.BENCH_PROFILE) : undefined;
const profiling = PROFILE_DIR ? profilingSettings(PROFILE_DIR) : undefined;
/** How creations ask to be answered once their work has ended. */
const WAIT = { Prefer: 'wait=60' };
const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth');
const ENDED = ['completed', 'failed', 'cancelled', 'timed_out', 'expired'];

type Http = ReturnType<typeof createHttpClient>;
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** The fixture lab published through the API and hosted ready: its lab id, reference and package digest. */
async function deploy(http: Http): Promise<{ labId: string; reference: string; sha256: string }> {
  const ws = await labWorkspace(http, LAB, 'bench hosting');
  const pub = await http.json('POST', '/publication-plans', { workspace_id: ws.workspace_id, revision_id: ws.revision_id, version: '1.0.0' });
  await http.json('POST', '/publications', { plan_id: pub.plan_id, plan_sha256: pub.plan_sha256 });
  let release;
  for (;;) {
    release = await http.json('GET', `/hub/releases/${encodeURIComponent(pub.reference)}`).catch(() => null);
    if (release) break;
    await sleep(200);
  }
  const sha256 = String(release.package_sha256).replace(/^sha256:/, '');
  const plan = await http.json('POST', `/labs/${ws.lab_id}/hosting-plans`, { release: { reference: pub.reference, sha256 }, min_instances: 1, max_instances: CALLERS }, { 'Idempotency-Key': crypto.randomUUID() });
  await http.json('POST', '/hosting-requests', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 });
  for (;;) {
    const h = await http.json('GET', `/labs/${ws.lab_id}/hosting`);
    if (h.status === 'ready') break;
    if (['failed', 'rejected'].includes(h.status)) throw new Error(`hosting ${h.status}: ${JSON.stringify(h.checks)}`);
    await sleep(200);
  }
  return { labId: ws.lab_id, reference: pub.reference, sha256 };
}

/**
 * Where an invocation's time goes before and after its execution, from its workflow
 * history: started → its first workflow task started and completed (the attempt sent
 * to the serving worker), → the execution started on that worker, and its end → the
 * workflow's completion; medians over `ids`.
 */
async function historyPhases(address: string, ids: string[]): Promise<string> {
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection });
    const rows: number[][] = [];
    for (const id of ids) {
      // An invocation its worker carried from its announcement to its ending has no workflow.
      const history = await client.workflow.getHandle(`invocation-${id}`).fetchHistory().catch((err: unknown) => {
        // The history call answers gRPC's NOT_FOUND (5) itself, not as WorkflowNotFoundError.
        if (err instanceof WorkflowNotFoundError || (err as { code?: number }).code === 5) return undefined;
        throw err;
      });
      if (!history) continue;
      const events = history.events ?? [];
      const at = (type: string) => {
        const e = events.find((x) => x.eventType === EventType[type as keyof typeof EventType]);
        return e?.eventTime ? Number(e.eventTime.seconds) * 1000 + (e.eventTime.nanos ?? 0) / 1e6 : NaN;
      };
      const t0 = at('EVENT_TYPE_WORKFLOW_EXECUTION_STARTED');
      rows.push([at('EVENT_TYPE_WORKFLOW_TASK_STARTED') - t0, at('EVENT_TYPE_WORKFLOW_TASK_COMPLETED') - t0, at('EVENT_TYPE_ACTIVITY_TASK_STARTED') - t0,
        at('EVENT_TYPE_ACTIVITY_TASK_COMPLETED') - t0, at('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED') - t0]);
    }
    if (!rows.length) return `none of the ${ids.length} has a workflow: each was carried by its worker alone`;
    const m = (i: number) => median(rows.map((r) => r[i]!)).toFixed(0);
    return `${rows.length} of ${ids.length} have a workflow; first workflow task started ${m(0)} ms, completed ${m(1)} ms; execution started ${m(2)} ms, ended ${m(3)} ms; workflow completed ${m(4)} ms (medians, from the start)`;
  } finally {
    await connection.close();
  }
}

/**
 * The floor: a warm instance of the same package, started by this process with the same
 * code, sandbox, limits and interpreter as a worker's, invoked directly (no HTTP, no
 * Temporal, no database): what an invocation costs the machine when nothing else does.
 * Its sandbox users are a range of its own, so it shares none with the stack's worker.
 */
async function floorInstance(stack: Stack, reference: string): Promise<{ invoke(inputs: Record<string, unknown>): Promise<number>; close(): Promise<void> }> {
  const config = loadConfig({ ...stack.env, SILICO_SANDBOX_UID_BASE: '90000', SILICO_SANDBOX_UID_COUNT: '16' });
  const db = createDb(stack.info.database_url, { poolMax: 1 });
  const [, namespace, name, version] = /^([^/]+)\/([^@]+)@(.+)$/.exec(reference)!;
  const release = await db('releases').where({ namespace, name, version }).first('archive_key', 'package_sha256');
  const profile = (await getComputeProfile(db, 'cpu-small'))!;
  await db.destroy();
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-floor-'));
  await mkdir(path.join(dir, 'input'));
  await writeFile(path.join(dir, 'input', 'lab.bsilab'), await createObjectStore(config.s3).getBytes(release.archive_key));
  const instance = await startWarmInstance(createSandbox(config.sandbox), {
    python: config.python, input: path.join(dir, 'input'), scratch: path.join(dir, 'instance'),
    limits: runLimits(profile, profile.max_runtime_seconds), env: labEnv(profile.vcpus),
  }, 'lab.bsilab', { package_sha256: release.package_sha256 }, { readySeconds: 60 });
  return {
    async invoke(inputs) {
      const t0 = performance.now();
      const outcome = await instance.invoke({ inputs, seed: 1, package_sha256: release.package_sha256 }, { wallSeconds: 60 }, { onMessage: () => undefined });
      if (outcome.result?.status !== 'completed') throw new Error(`the floor's invocation ended ${JSON.stringify(outcome)}`);
      return performance.now() - t0;
    },
    async close() {
      await instance.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The record once ended, from its creation's answer or by reading `url` every BENCH_POLL_MS; one that did not complete is an error. */
async function endedFrom(http: Http, answer: Record<string, any>, url: string): Promise<Record<string, any>> {
  let r = answer;
  while (!ENDED.includes(r.status)) {
    await sleep(POLL_MS);
    r = await http.json('GET', url);
  }
  if (r.status !== 'completed') throw new Error(`${url} ${r.status}: ${JSON.stringify(r.error)}`);
  return r;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-invocations-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  let http: Http | undefined;
  let floor: Awaited<ReturnType<typeof floorInstance>> | undefined;
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({
      exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`),
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', LOG_LEVEL: 'warn' },
      serviceNodeArgs: profiling?.serviceNodeArgs,
      postgresSettings: profiling?.postgresSettings,
    });
    http = createHttpClient(stack.info.base_url.replace('//localhost:', '//127.0.0.1:'), { Authorization: `Bearer ${stack.info.api_key}` });
    const h = http;
    const target = await deploy(h);
    floor = await floorInstance(stack, target.reference);
    const direct = floor;
    // The deployment is served once a worker holds its warm instance: the first invocation waits for that.
    const inputs = (i: number) => ({ growth_rate: 0.1 + 0.001 * i, noise: 0.05 });

    const planned: number[] = [];
    /** The invocations of the round under way (their histories are read after the last). */
    let lastRound: string[] = [];
    /** How long `POST /hosted-invocations` took to answer, per invocation. */
    const answered: number[] = [];
    /** Per invocation: accepted → leased on its worker, leased → settled (server clocks). */
    const phases: Array<[number, number]> = [];
    const warm = async (i: number): Promise<number> => {
      const p0 = performance.now();
      const plan = await h.json('POST', '/hosted-invocation-plans', { reference: target.reference, sha256: target.sha256, inputs: inputs(i) }, { 'Idempotency-Key': crypto.randomUUID() });
      // The plan is the approval, made before the invocation; the invocation starts at its execution.
      const t0 = performance.now();
      planned.push(t0 - p0);
      const inv = await h.json('POST', '/hosted-invocations', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, WAIT);
      lastRound.push(inv.invocation_id);
      answered.push(performance.now() - t0);
      const r = await endedFrom(h, inv, `/hosted-invocations/${inv.invocation_id}`);
      const at = (x: string) => new Date(x).getTime();
      phases.push([at(r.started_at) - at(r.created_at), at(r.finished_at) - at(r.started_at)]);
      return performance.now() - t0;
    };
    const cold = async (i: number): Promise<number> => {
      const t0 = performance.now();
      const run = await h.json('POST', '/runs', { ref: target.reference, inputs: inputs(i), max_runtime_seconds: 60 }, { 'Idempotency-Key': crypto.randomUUID(), ...WAIT });
      await endedFrom(h, run, `/runs/${run.id}`);
      return performance.now() - t0;
    };
    const series = async (f: (i: number) => Promise<number>) => {
      const out: number[] = [];
      for (let i = 0; i < N; i++) out.push(await f(i));
      return out;
    };
    /** A side's series, and the CPU each stack process spent per unit of it (where the machine's time went). */
    const cpu: Record<'warm' | 'cold', string> = { warm: '', cold: '' };
    const sideSeries = async (side: 'warm' | 'cold') => {
      const before = cpuSample(stack!.supervisor);
      const out = await series(side === 'warm' ? warm : cold);
      cpu[side] = cpuPerUnit(before, cpuSample(stack!.supervisor), N);
      return out;
    };

    await warm(0);
    await cold(0);
    await direct.invoke(inputs(0));
    if (PROFILE_DIR) {
      // One window of warm invocations, profiled; the processes write their profiles as they exit.
      const units = 3 * N;
      const names = processNames(stack);
      const pgDb = createDb(stack.info.database_url, { poolMax: 1 });
      await resetStatements(pgDb);
      const from = monotonicMicros();
      const w: number[] = [];
      for (let i = 0; i < units; i++) w.push(await warm(i));
      const to = monotonicMicros();
      console.log(`profile: ${units} warm invocations, median ${median(w).toFixed(0)} ms`);
      console.log(await statementReport(pgDb, units));
      await pgDb.destroy();
      await floor.close();
      floor = undefined;
      // The worker writes its main thread's profile as it exits, which can outlast the stack's stop.
      for (const p of stack.supervisor.processes.filter((x) => x.name === 'worker')) {
        p.child.kill('SIGTERM');
        await Promise.race([p.exited, new Promise((r) => setTimeout(r, 120_000))]);
      }
      await stack.stop();
      stack = undefined;
      console.log(await cpuProfileReport(PROFILE_DIR, names, { from, to }, units));
      return;
    }
    console.log(`${N} invocations of a warm deployment (1 instance kept warm) and ${N} cold runs of the same release, one at a time, each answered ended (Prefer: wait)`);
    const ratios: number[] = [];
    const floorRatios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const first = round % 2 ? 'warm' : 'cold';
      lastRound = [];
      const a = await sideSeries(first);
      const b = await sideSeries(first === 'warm' ? 'cold' : 'warm');
      const [w, c] = first === 'warm' ? [a, b] : [b, a];
      const d = await series((i) => direct.invoke(inputs(i)));
      const ratio = median(w) / median(c);
      ratios.push(ratio);
      floorRatios.push(median(w) / median(d));
      console.log(`round ${round} (${first} first): warm median ${median(w).toFixed(0)} ms (min ${Math.min(...w).toFixed(0)}), cold median ${median(c).toFixed(0)} ms (min ${Math.min(...c).toFixed(0)}), ratio ${ratio.toFixed(3)}; preparing a plan: median ${median(planned.splice(0)).toFixed(0)} ms`);
      console.log(`  floor (the same warm instance's code invoked directly): median ${median(d).toFixed(0)} ms (min ${Math.min(...d).toFixed(0)}); warm / floor ${floorRatios.at(-1)!.toFixed(2)}`);
      const ph = phases.splice(0);
      console.log(`  warm: POST /hosted-invocations answered in ${median(answered.splice(0)).toFixed(0)} ms; server side: accepted → leased median ${median(ph.map((p) => p[0])).toFixed(0)} ms, leased → settled median ${median(ph.map((p) => p[1])).toFixed(0)} ms`);
      console.log(`  CPU ms per warm invocation (its plan included): ${cpu.warm}`);
      console.log(`  CPU ms per cold run: ${cpu.cold}`);
    }
    console.log(`  warm, Temporal's view (histories of the last round): ${await historyPhases(stack.info.temporal_address, lastRound)}`);
    // Callers at once: the deployment grows to as many instances (a burst untimed), then each caller's invocations are timed.
    const burst = async () => (await Promise.all(Array.from({ length: CALLERS }, async (_, c) => {
      const out: number[] = [];
      for (let i = 0; i < N; i++) out.push(await warm(c * N + i));
      return out;
    }))).flat();
    await burst();
    const together = await burst();
    const tail = p99(together) / median(together);
    console.log(`${CALLERS} callers at once, ${N} invocations each: median ${median(together).toFixed(0)} ms, p99 ${p99(together).toFixed(0)} ms`);
    console.log(`latency ratio (warm invocation / cold run, median of ${ROUNDS} rounds): ${median(ratios).toFixed(3)}  goal <= 0.25`);
    console.log(`latency ratio (warm invocation / floor, median of ${ROUNDS} rounds): ${median(floorRatios).toFixed(2)}  goal <= 2 (or a warm median <= 40 ms)`);
    console.log(`tail ratio (p99 / median, ${CALLERS} callers at once): ${tail.toFixed(2)}  goal <= 3`);
  } catch (err) {
    console.error(err);
    process.exitCode = 1;
  } finally {
    await floor?.close();
    http?.close();
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
    process.exit(process.exitCode ?? 0);
  }
}

void main();

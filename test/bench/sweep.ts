/**
 * `npm run bench:sweep`: what a sweep of short runs costs through the service against the
 * runtime alone (issue 45).
 *
 * Service: a Sobol' study of the Ishigami lab (test/fixtures/labs/ishigami: three inputs
 * on [-π, π], one output, one step), base sample N / 5, so N runs, through
 * `POST /experiment-plans` + `POST /experiments`, until its workflow has ended (waited on
 * through Temporal, not polled: the bench reads no run while the study runs): every run
 * executed in its sandbox, recorded, told, and the analysis stored.
 * Runtime: the same N parameter sets (the study's own, read back) run by the runtime
 * itself in two interpreters at once, half each, on the same two cores
 * (test/bench/sweepDirect.py: pack once, then unpack, apply the inputs, prepare and run
 * per set), from spawning them until both are done. Both sides' outputs must agree.
 *
 * Meanwhile another account submits a lone run every BENCH_LONE_EVERY_MS while the study
 * runs: its start wait (accepted to started) is what fair shares promise (p95 goal 1 s);
 * after the rounds, the same beside two accounts' studies at once.
 * Each stack process's peak memory (proportional set size with its children: the worker's
 * sandboxes, Postgres's backends, pages they share counted once) is sampled every 2 s (reading
 * every process's page tables costs the bench CPU the service would otherwise have).
 *
 * A warm-up study of 40 runs first, then BENCH_ROUNDS rounds alternating which side goes
 * first; prints per round both wall times, runs per second, the lone runs' start waits,
 * the CPU each process spent per study run and the peak memory, and the median ratio
 * (service / runtime) last; goal <= 1.5.
 *
 * BENCH_LARGE=100000: instead of the rounds, Morris studies of BENCH_RUNS, a tenth of
 * BENCH_LARGE and BENCH_LARGE runs (the most a study takes) in one stack, each with the
 * same lone runs beside it: wall time, runs per second, the lone runs' start waits, CPU per
 * run and each process's peak memory; then the peaks at BENCH_LARGE against a tenth
 * (goal <= 1.2 each) and, last, the rate at BENCH_LARGE against BENCH_RUNS (goal >= 0.9).
 *
 * BENCH_PROFILE=DIR: one study (with its lone runs) profiled (V8 CPU profiles of the api
 * and worker, Postgres's statements), and where its time went; after BENCH_PROFILE_AFTER
 * rounds when set, to see what a run costs once the stack has a history.
 *
 * Env: BENCH_RUNS (1280), BENCH_ROUNDS (3), BENCH_CONCURRENCY (4: the account's limit),
 * BENCH_LONE_EVERY_MS (3000).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { Client, Connection } from '@temporalio/client';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { createDb } from '../../storage/db/knex.ts';
import { makeAccount } from '../accounts.ts';
import { createHttpClient } from './httpClient.ts';
import { labWorkspace } from './labWorkspace.ts';
import { cpuPerUnit, cpuSample, largestOf, pssByProcess, type TreeMemory } from './cpu.ts';
import { cpuProfileReport, monotonicMicros, processNames, profilingSettings, resetStatements, statementReport } from './profile.ts';
import { median, p95 } from './stats.ts';

const N = Number(process.env.BENCH_RUNS ?? 1280);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const C = Number(process.env.BENCH_CONCURRENCY ?? 4);
const LONE_EVERY_MS = Number(process.env.BENCH_LONE_EVERY_MS ?? 3000);
const LARGE = Number(process.env.BENCH_LARGE ?? 0);
const PROFILE_DIR = process.env.BENCH_PROFILE ? path.resolve(process.env.BENCH_PROFILE) : undefined;
const PROFILE_AFTER = Number(process.env.BENCH_PROFILE_AFTER ?? 0);
const profiling = PROFILE_DIR ? profilingSettings(PROFILE_DIR) : undefined;
const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/ishigami');
const DIRECT = path.join(REPO_ROOT, 'test/bench/sweepDirect.py');
const PARAMETERS = ['x1', 'x2', 'x3'].map((input) => ({ input, low: -Math.PI, high: Math.PI }));

type Http = ReturnType<typeof createHttpClient>;
type Db = ReturnType<typeof createDb>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the runtime alone over `sets` in two interpreters, half each; its wall time and the outputs in order. */
async function direct(python: string, dir: string, sets: Array<Record<string, number>>): Promise<{ seconds: number; values: number[] }> {
  const halves = [sets.slice(0, Math.ceil(sets.length / 2)), sets.slice(Math.ceil(sets.length / 2))];
  const files = await Promise.all(halves.map(async (h, i) => {
    const f = path.join(dir, `sets-${i}.json`);
    await writeFile(f, JSON.stringify(h));
    return f;
  }));
  const t0 = performance.now();
  const outs = await Promise.all(files.map((f) => new Promise<number[]>((resolve, reject) => {
    const child = spawn(python, [DIRECT, LAB, f, 'f.y'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out).values) : reject(new Error(`sweepDirect.py exited with ${code}`))));
  })));
  return { seconds: (performance.now() - t0) / 1000, values: outs.flat() };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-sweep-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  const clients: Http[] = [];
  const closers: Array<() => Promise<void>> = [];
  let profiled: { from: number; to: number } | undefined;
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({
      exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`),
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', SILICO_CONCURRENT_RUNS: String(C), LOG_LEVEL: 'warn' },
      serviceNodeArgs: profiling?.serviceNodeArgs,
      postgresSettings: profiling?.postgresSettings,
    });
    const s = stack;
    const base = s.info.base_url.replace('//localhost:', '//127.0.0.1:');
    const db: Db = createDb(s.info.database_url, { poolMax: 2 });
    const connection = await Connection.connect({ address: s.info.temporal_address });
    closers.push(() => connection.close());
    const temporal = new Client({ connection });
    const h = createHttpClient(base, { Authorization: `Bearer ${s.info.api_key}` });
    const other = await makeAccount(db, { namespace: 'bench-lone', usd: 1000 });
    const lone = createHttpClient(base, { Authorization: `Bearer ${other.key}` });
    clients.push(h, lone);
    const labOf = async (http: Http) => {
      const ws = await labWorkspace(http, LAB, 'bench sweep');
      return { workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: 60 };
    };
    const lab = await labOf(h);
    const loneLab = await labOf(lone);

    /** Lone runs of the other account, one every LONE_EVERY_MS until `done`; their ids. */
    const loneRuns = async (done: { stop: boolean }) => {
      const ids: string[] = [];
      for (let i = 0; !done.stop; i++) {
        const inputs = { x1: Math.sin(i), x2: Math.cos(i), x3: 0.5 };
        const plan = await lone.json('POST', '/run-plans', { ...loneLab, inputs });
        ids.push((await lone.json('POST', '/runs', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() })).id);
        await sleep(LONE_EVERY_MS);
      }
      return ids;
    };
    /** Start waits (s) of these runs, once every one has ended. */
    const startWaits = async (ids: string[]) => {
      for (;;) {
        const rows: Array<{ status: string; created_at: Date; started_at: Date | null }> = await db('runs').whereIn('id', ids).select('status', 'created_at', 'started_at');
        if (rows.every((r) => ['completed', 'failed', 'cancelled', 'timed_out'].includes(r.status))) {
          const bad = rows.filter((r) => r.status !== 'completed');
          if (bad.length) throw new Error(`${bad.length} lone runs did not complete`);
          return rows.map((r) => (r.started_at!.getTime() - r.created_at.getTime()) / 1000);
        }
        await sleep(500);
      }
    };

    /** One Sobol' study of `n` runs (Morris: `n` / 4 trajectories), from its plan until the client reads it completed. */
    const study = async (n: number, withLone: boolean, method: 'sobol' | 'morris' = 'sobol', who: { h: Http; lab: typeof lab } = { h, lab }) => {
      // Each process's memory at its peak, with its parts (Postgres's shared memory is its
      // buffers, bounded by its configuration), and each one's largest processes then: which
      // of them grows with a study's size. Every minute, each one's memory: whether it grows
      // with the runs done or peaks once.
      const peak: Record<string, TreeMemory> = {};
      const atPeak: Record<string, ReturnType<typeof largestOf>> = {};
      const byMinute: Array<Record<string, TreeMemory>> = [];
      let samples = 0;
      const sampler = setInterval(() => {
        const now = pssByProcess(s.supervisor);
        if (samples++ % 30 === 0) byMinute.push(now);
        for (const [k, v] of Object.entries(now)) {
          if (v.mib <= (peak[k]?.mib ?? 0)) continue;
          atPeak[k] = largestOf(v);
          peak[k] = v;
        }
      }, 2000);
      const cpu0 = cpuSample(s.supervisor);
      const t0 = performance.now();
      const plan = await who.h.json('POST', '/experiment-plans', {
        name: 'bench sweep', lab: who.lab,
        sensitivity: { parameters: PARAMETERS, outputs: [{ output: 'y', summary: 'value' }], method, base_sample: method === 'sobol' ? n / 5 : n / 4, seed: 45 },
      });
      if (plan.status !== 'ready') throw new Error(`study plan blocked: ${JSON.stringify(plan.findings)}`);
      const asked = performance.now();
      const e = await who.h.json('POST', '/experiments', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
      const accepted = (performance.now() - asked) / 1000;
      const done = { stop: false };
      const lones = withLone ? loneRuns(done) : Promise.resolve([]);
      // Its workflow's end is the study's (the analysis stored, completed_at set): waited on, not polled.
      await temporal.workflow.getHandle(`experiment-${e.id}`).result();
      const read = await who.h.json('GET', `/experiments/${e.id}`);
      const seconds = (performance.now() - t0) / 1000;
      done.stop = true;
      clearInterval(sampler);
      const cpu = cpuPerUnit(cpu0, cpuSample(s.supervisor), n);
      if (read.run_totals.completed !== n) throw new Error(`study ${e.id}: ${JSON.stringify(read.run_totals)}`);
      const points: Array<{ params: Record<string, number>; outputs: { y: number } }> = await db('experiment_points as p').join('runs as r', 'r.id', 'p.run_id')
        .where('p.experiment_id', e.id).orderBy('p.idx').select('p.params', 'r.outputs');
      const waits = await startWaits(await lones);
      return { seconds, accepted, sets: points.map((p) => p.params), values: points.map((p) => p.outputs.y), waits, cpu, peak, atPeak, byMinute };
    };
    const agree = (a: number[], b: number[]) => {
      if (a.length !== b.length || a.some((v, i) => Math.abs(v - b[i]!) > 1e-9 * Math.max(1, Math.abs(v)))) throw new Error('the service and the runtime disagree on the outputs');
    };

    const warm = await study(40, false);
    agree(warm.values, (await direct(s.env.SILICO_PYTHON!, dir, warm.sets)).values);
    if (PROFILE_DIR) {
      // Rounds first, when asked (a study with its lone runs, then the runtime alone while
      // the service idles): where a run's cost goes once the stack has a history.
      for (let i = 0; i < PROFILE_AFTER; i++) await direct(s.env.SILICO_PYTHON!, dir, (await study(N, true)).sets);
      await resetStatements(db);
      const from = monotonicMicros();
      const r = await study(N, true);
      profiled = { from, to: monotonicMicros() };
      console.log(`profile: a ${N}-run study in ${r.seconds.toFixed(1)} s, ${(N / r.seconds).toFixed(1)} runs/s`);
      console.log(`CPU ms per run: ${r.cpu}`);
      console.log(await statementReport(db, N));
      await db.destroy();
      return;
    }
    if (LARGE) {
      // The same lab at three sizes in one stack: the rate against the 1,280-run study's, and memory against a tenth of the size.
      const say = (n: number, r: Awaited<ReturnType<typeof study>>) => {
        console.log(`a ${n}-run Morris study of a one-step lab (${C} runs at a time, the account's limit): ${r.seconds.toFixed(1)} s, ${(n / r.seconds).toFixed(1)} runs/s (its acceptance, POST /experiments: ${r.accepted.toFixed(2)} s)`);
        console.log(`  another account's ${r.waits.length} lone runs: start wait median ${median(r.waits).toFixed(2)} s, p95 ${p95(r.waits).toFixed(2)} s (goal <= 1 s)`);
        console.log(`  CPU ms per study run: ${r.cpu}`);
        console.log(`  peak memory (MiB proportional, with children; of it own, files, shared): ${Object.entries(r.peak).map(([k, v]) => `${k} ${v.mib.toFixed(0)} (${[v.anonMib, v.fileMib, v.shmemMib].map((x) => x.toFixed(0)).join(', ')})`).join('; ')}`);
        for (const [k, all] of Object.entries(r.atPeak)) {
          const [top, rest] = [all.slice(0, 5), all.slice(5)];
          console.log(`  ${k}'s largest processes at its peak by their own memory (MiB, own of total): ${top.map((p) => `${p.what} ${p.ownMib.toFixed(0)} of ${p.mib.toFixed(0)}`).join('; ')}; `
            + `its ${rest.length} others ${rest.reduce((a, p) => a + p.ownMib, 0).toFixed(0)} of their own`);
        }
        const names = Object.keys(r.peak);
        console.log(`  memory each minute (MiB, own in brackets): ${names.map((k) => `${k} ${r.byMinute.map((m) => m[k] ? `${m[k].mib.toFixed(0)}(${m[k].anonMib.toFixed(0)})` : '-').join(' ')}`).join('; ')}`);
      };
      const small = await study(N, true, 'morris');
      say(N, small);
      const tenth = Math.round(LARGE / 10 / 4) * 4;
      const middle = await study(tenth, true, 'morris');
      say(tenth, middle);
      const r = await study(LARGE, true, 'morris');
      say(LARGE, r);
      const ratios = (of: (m: TreeMemory) => number) => Object.keys(r.peak).filter((k) => middle.peak[k]).map((k) => `${k} ${(of(r.peak[k]!) / of(middle.peak[k]!)).toFixed(2)}`).join(', ');
      console.log(`peak memory at ${LARGE} runs against ${tenth}: ${ratios((m) => m.mib)} (goal <= 1.2 each); own memory alone: ${ratios((m) => m.anonMib)}`);
      console.log(`runs per second at ${LARGE} runs against ${N}: ${((LARGE / r.seconds) / (N / small.seconds)).toFixed(2)}  goal >= 0.9`);
      await db.destroy();
      return;
    }
    console.log(`a ${N}-run Sobol' study of a one-step lab (${C} runs at a time, the account's limit) against the runtime alone over the same sets, two interpreters`);
    const ratios: number[] = [];
    let sets: Array<Record<string, number>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const first = round % 2 ? 'service' : 'runtime';
      let svc: Awaited<ReturnType<typeof study>>;
      let rt: Awaited<ReturnType<typeof direct>>;
      if (first === 'service') {
        svc = await study(N, true);
        sets = svc.sets;
        rt = await direct(s.env.SILICO_PYTHON!, dir, sets);
      } else {
        // The same seed asks the same sets: round 1's.
        rt = await direct(s.env.SILICO_PYTHON!, dir, sets);
        svc = await study(N, true);
      }
      agree(svc.values, rt.values);
      ratios.push(svc.seconds / rt.seconds);
      console.log(`round ${round} (${first} first): service ${svc.seconds.toFixed(1)} s (${(N / svc.seconds).toFixed(1)} runs/s), runtime ${rt.seconds.toFixed(1)} s (${(N / rt.seconds).toFixed(1)} runs/s), ratio ${(svc.seconds / rt.seconds).toFixed(2)}`);
      console.log(`  another account's ${svc.waits.length} lone runs: start wait median ${median(svc.waits).toFixed(2)} s, p95 ${p95(svc.waits).toFixed(2)} s (goal <= 1 s); slowest ${[...svc.waits].sort((a, b) => b - a).slice(0, 3).map((w) => w.toFixed(2)).join(', ')} s`);
      console.log(`  CPU ms per study run: ${svc.cpu}`);
      console.log(`  peak memory (MiB proportional, with children): ${Object.entries(svc.peak).map(([k, v]) => `${k} ${v.mib.toFixed(0)}`).join(', ')}`);
    }
    // Fair under load: two accounts' studies at once, and a third account's lone runs beside them.
    const second = await makeAccount(db, { namespace: 'bench-second', usd: 1000 });
    const h2 = createHttpClient(base, { Authorization: `Bearer ${second.key}` });
    clients.push(h2);
    const [both] = await Promise.all([study(N, true), study(N, false, 'sobol', { h: h2, lab: await labOf(h2) })]);
    console.log(`beside two other accounts' ${N}-run studies at once, another account's ${both.waits.length} lone runs: start wait median ${median(both.waits).toFixed(2)} s, p95 ${p95(both.waits).toFixed(2)} s (goal <= 1 s); slowest ${[...both.waits].sort((a, b) => b - a).slice(0, 3).map((w) => w.toFixed(2)).join(', ')} s`);
    console.log(`wall-time ratio (service / runtime, median of ${ROUNDS} rounds): ${median(ratios).toFixed(2)}  goal <= 1.5`);
    await db.destroy();
  } catch (err) {
    console.error(err);
    process.exitCode = 1;
  } finally {
    for (const c of clients) c.close();
    for (const close of closers) await close().catch(() => undefined);
    const names = stack ? processNames(stack) : new Map<number, string>();
    await stack?.stop();
    if (profiled) console.log(await cpuProfileReport(PROFILE_DIR!, names, profiled, N));
    log.end();
    await rm(dir, { recursive: true, force: true });
    process.exit(process.exitCode ?? 0);
  }
}

void main();

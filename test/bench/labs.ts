/**
 * `npm run bench:labs`: what the platform costs a lab run, against the science itself.
 *
 * The lab: the built-in predator-prey (three wired models, one of them a visualisation),
 * copied with its duration stretched to exactly 10,000 communication steps and declaring
 * `runtime.python_version: '3.12'`, so it runs in an environment of its own (resolved and
 * built as a plan and a worker do; the cold build's time is printed apart, then every run
 * finds it built), and published for the stack's operator account with the code the
 * stack uses for built-in labs, packed in that environment.
 * Ours: `POST /v1/runs` (the direct form, with an Idempotency-Key), then waiting for the
 * terminal status the way the SDK does (the run's event stream, which the server closes
 * after the terminal event; BENCH_POLL_MS > 0 polls `GET /runs/{id}` instead), and a check
 * that it completed: API, plan checks, ledger, Temporal, the worker's download of the
 * archive, the driver, outputs and artifacts, settlement.
 * Baseline: the same archive (the release's bytes, read back from the object store) run
 * directly with the pinned runtime, the runtime's own way (`biosim.pack.run_package`,
 * directRun.py) with the same environment's interpreter, in the same sandbox with the same
 * limits a run on that compute profile gets, timed from the sandbox's spawn to its exit.
 * Rounds alternate ours/baseline run by run; each round prints its medians; the median
 * of the rounds' ratios ours/baseline is the last line (goal <= 1.15).
 *
 * Env: BENCH_ROUNDS (3), BENCH_RUNS (5 of each per round), BENCH_POLL_MS (0: event stream),
 * BENCH_TRACE (1: print where the last run of ours spent its time, from its events).
 */
import { createWriteStream } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import getPort from 'get-port';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { publishLab } from '../../deploy/local/builtinLabs.ts';
import { loadConfig } from '../../kernel/config.ts';
import { createDb } from '../../storage/db/knex.ts';
import { createObjectStore } from '../../storage/objects.ts';
import { getComputeProfile } from '../../storage/db/computeProfiles.ts';
import { createSandbox } from '../../activities/execution/sandbox.ts';
import { outcomeError, runLabProcess } from '../../activities/execution/labProcess.ts';
import { labEnv, runLimits } from '../../activities/execution/labSpec.ts';
import { cpuSample, cpuPerUnit, type CpuSample } from './cpu.ts';
import YAML from 'yaml';
import { declaredRuntime } from '../../api/runs/declaredRuntime.ts';
import { resolveLock } from '../../api/runs/resolveLock.ts';
import { ensureEnvironment } from '../../activities/environments/build.ts';
import { readRuntimeLock } from '../../storage/runtimePins.ts';
import { createHttpClient } from './httpClient.ts';
import { median } from './stats.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 0);
// 1: also print the timeline of the last run of ours (its events, by server time).
const TRACE = process.env.BENCH_TRACE === '1';
const STEPS = 10_000;
const PROFILE = 'cpu-small';
const MAX_RUNTIME = 300;
const DIRECT = fileURLToPath(new URL('./directRun.py', import.meta.url));
/** Not the default runtime's: the lab runs in an environment of its own. */
const PYTHON = '3.12';


async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-labs-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  const clients: Array<{ close(): void }> = [];
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({
      exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`),
      // Environments of its own, so the first build is a cold one.
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', LOG_LEVEL: 'warn', SILICO_ENVIRONMENTS_DIR: path.join(dir, 'environments') },
    });
    const config = loadConfig({ ...process.env, ...stack.env });
    const db = createDb(stack.info.database_url, { poolMax: 2 });
    const objects = createObjectStore(config.s3);

    // The lab: predator-prey with duration / communication_step = 10,000 exactly.
    const labDir = path.join(dir, 'predator-prey-10k');
    await cp(path.join(REPO_ROOT, 'labs/predator-prey'), labDir, { recursive: true });
    const yamlPath = path.join(labDir, 'lab.yaml');
    const yaml = await readFile(yamlPath, 'utf8');
    const step = Number(/^ {2}communication_step: ([0-9.]+)$/m.exec(yaml)?.[1]);
    const stretched = yaml.replace(/^ {2}duration: [0-9.]+$/m, `  duration: ${STEPS * step}\n  python_version: '${PYTHON}'`);
    if (!step || stretched === yaml) throw new Error('labs/predator-prey/lab.yaml: runtime.duration or communication_step not found');
    await writeFile(yamlPath, stretched);
    const account = await db('accounts').where({ id: stack.info.account_id }).first('namespace');
    const sandbox = createSandbox(config.sandbox);
    // Its environment, as a plan resolves it and a worker builds it (timed cold).
    const declared = declaredRuntime({ lab: YAML.parse(stretched), models: [] }, readRuntimeLock());
    const resolved = await resolveLock(config.environments, { python: declared.python, requirements: declared.requirements });
    if ('error' in resolved) throw new Error(`resolving the lab's environment: ${resolved.error}`);
    const built = performance.now();
    const python = await ensureEnvironment(config.environments, sandbox, { ...resolved.lock, lock: resolved.lock.text });
    console.log(`cold build of its environment (Python ${resolved.lock.python}, lock sha256:${resolved.lock.sha256.slice(0, 12)}…): ${((performance.now() - built) / 1000).toFixed(1)} s`);
    const release = await publishLab(db, objects, { python, sandbox }, {
      dir: labDir, accountId: stack.info.account_id, namespace: account.namespace, name: 'predator-prey-10k', version: '1.0.0', visibility: 'private',
    });
    const ref = `${release.namespace}/${release.name}@${release.version}`;
    const input = path.join(dir, 'direct-input');
    await mkdir(input);
    await writeFile(path.join(input, 'lab.bsilab'), await objects.getBytes(release.archive_key!));

    // The baseline's sandbox, limits and environment: those of a run on the same profile.
    const profile = (await getComputeProfile(db, PROFILE))!;
    await db.destroy();
    let directSeq = 0;
    let directCpuMs = 0;
    const baseline = async (): Promise<number> => {
      const scratch = path.join(dir, `direct-${directSeq++}`);
      const stdout: string[] = [];
      const t = performance.now();
      const outcome = await runLabProcess(sandbox, {
        python, script: DIRECT, input, scratch, args: (p) => [path.join(p.input, 'lab.bsilab'), p.scratch],
        limits: runLimits(profile, MAX_RUNTIME), env: labEnv(profile.vcpus),
      }, '', { wallSeconds: MAX_RUNTIME }, { onMessage: () => undefined, onLog: (s, l) => { if (s === 'stdout') stdout.push(l); } });
      const ms = performance.now() - t;
      await rm(scratch, { recursive: true, force: true });
      const error = outcomeError(outcome);
      if (error) throw new Error(`direct run: ${error.code}: ${error.message}`);
      directCpuMs += (outcome.result?.cpu_seconds ?? 0) * 1000;
      const summary = JSON.parse(stdout.at(-1) ?? '{}');
      if (summary.steps !== STEPS) throw new Error(`direct run: ${JSON.stringify(summary)}, expected ${STEPS} steps`);
      return ms;
    };

    const http = createHttpClient(stack.info.base_url.replace('//localhost:', '//127.0.0.1:'), { Authorization: `Bearer ${stack.info.api_key}` });
    clients.push(http);
    let last: { id: string; posted: number; seen: number } | undefined;
    const ours = async (): Promise<number> => {
      const posted = Date.now();
      const t = performance.now();
      const run = await http.json('POST', '/runs', { ref, inputs: {}, compute_profile: PROFILE, max_runtime_seconds: MAX_RUNTIME }, { 'Idempotency-Key': crypto.randomUUID() });
      if (!run.id) throw new Error(`POST /runs: ${JSON.stringify(run)}`);
      let r;
      if (POLL_MS > 0) {
        for (;;) {
          r = await http.json('GET', `/runs/${run.id}`);
          if (!['queued', 'running', 'cancelling'].includes(r.status)) break;
          await new Promise((res) => setTimeout(res, POLL_MS));
        }
      } else {
        await http.text(`/runs/${run.id}/events`, { Accept: 'text/event-stream' });
        r = await http.json('GET', `/runs/${run.id}`);
      }
      const ms = performance.now() - t;
      last = { id: run.id, posted, seen: Date.now() };
      if (r.status !== 'completed') throw new Error(`run ${run.id} ${r.status}: ${JSON.stringify(r.error)}`);
      return ms;
    };

    console.log(`${ref}: ${STEPS} communication steps; ${ROUNDS} rounds of ${RUNS} runs each way, alternating; profile ${PROFILE}; waiting ${POLL_MS > 0 ? `by polling every ${POLL_MS} ms` : 'on the event stream'}`);
    // Warm both paths (worker, interpreter caches, page cache) once.
    await ours();
    const ran = await http.json('GET', `/runs/${last!.id}/results`);
    if (ran.provenance.environment_lock_sha256 !== resolved.lock.sha256) throw new Error(`the run's environment is ${ran.provenance.environment_lock_sha256}, not the one built (${resolved.lock.sha256})`);
    await baseline();
    const cpu = { ours: {} as CpuSample, baseline: {} as CpuSample };
    const add = (into: CpuSample, a: CpuSample, b: CpuSample) => { for (const k of Object.keys(b)) into[k] = (into[k] ?? 0) + b[k]! - (a[k] ?? 0); };
    // The direct runs' own CPU as their interpreter reports it (their sandbox is a child
    // of this process, so no supervised process's tree holds it).
    const sample = () => ({ ...cpuSample(stack!.supervisor), 'direct lab': directCpuMs });
    const ratios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const o: number[] = [];
      const b: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        let s = sample();
        o.push(await ours());
        let s2 = sample();
        add(cpu.ours, s, s2);
        s = s2;
        b.push(await baseline());
        s2 = sample();
        add(cpu.baseline, s, s2);
      }
      const ratio = median(o) / median(b);
      ratios.push(ratio);
      const fmt = (xs: number[]) => xs.map((x) => (x / 1000).toFixed(2)).join(' ');
      console.log(`round ${round}: ours median ${(median(o) / 1000).toFixed(3)} s [${fmt(o)}]   baseline median ${(median(b) / 1000).toFixed(3)} s [${fmt(b)}]   ratio ${ratio.toFixed(3)}`);
    }
    if (TRACE && last) {
      const r = await http.json('GET', `/runs/${last.id}`);
      const ev = await http.json('GET', `/runs/${last.id}/events?limit=1000`);
      const at = (iso: string) => `+${((Date.parse(iso) - last!.posted) / 1000).toFixed(3)}`.padStart(8);
      console.log(`timeline of run ${last.id} (s after the POST):`);
      console.log(`${at(r.created_at)} created`);
      console.log(`${at(r.started_at)} started (archive in the worker's sandbox input)`);
      for (const e of ev.items) console.log(`${at(e.at)} ${e.type}: ${String(e.message).slice(0, 80)}`);
      console.log(`${at(r.finished_at)} finished`);
      console.log(`${at(new Date(last.seen).toISOString())} seen completed by the client`);
    }
    const n = ROUNDS * RUNS;
    console.log(`CPU ms per run, ours:     ${cpuPerUnit({}, cpu.ours, n)}`);
    console.log(`CPU ms per run, baseline: ${cpuPerUnit({}, cpu.baseline, n)}`);
    console.log(`wall time ratio (ours/baseline, median of ${ROUNDS} rounds): ${median(ratios).toFixed(3)}  goal <= 1.15`);
  } catch (err) {
    // Reported here: the exit in `finally` would end the process before a caller's catch.
    console.error(err);
    process.exitCode = 1;
  } finally {
    for (const c of clients) c.close();
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
    process.exit(process.exitCode ?? 0);
  }
}

void main();

/**
 * `npm run bench:loader`: what running the api's and the worker's TypeScript costs at start,
 * tsx (esbuild, in a child process of its own) against Node's own type handling.
 *
 * One isolated stack; then, round by round, an extra api and an extra worker on it are
 * started by each loader, as the stack starts them (`node <loader> deploy/api.ts`, the
 * stack's environment, the pre-built workflow bundle), and timed from spawn to their first
 * ready `/readyz`; their memory is the resident set of the process and its descendants
 * (tsx's esbuild service), read once ready. Each loader starts cold (an empty cache: tsx's in its
 * temporary folder, Node's compile cache off) and then warm (its cache filled by the cold
 * start: tsx's transforms, NODE_COMPILE_CACHE for Node). Rounds alternate which loader goes
 * first. The last line is the median ratio Node / tsx of the cold api's start time.
 *
 * Env: BENCH_ROUNDS (3), BENCH_NODE_ARGS (Node's own loader's flags: none, type stripping).
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { SERVICE_PROCESS_ENV } from '../../deploy/local/serviceProcess.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { treeRssMiB } from './cpu.ts';
import { median } from './stats.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LOADERS: Record<string, string[]> = {
  tsx: ['--import', 'tsx'],
  node: (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
};
const KINDS = { api: 'deploy/api.ts', worker: 'deploy/worker.ts' } as const;
type Kind = keyof typeof KINDS;

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** Starts one process of `kind` with `loader`, returns its start time (ms) and memory (MiB) once ready, and stops it. */
async function startOnce(stack: Stack, kind: Kind, loader: string, cache: { tmp: string; compile: string | null }, log: NodeJS.WritableStream): Promise<{ ms: number; mib: number }> {
  const port = await getPort();
  const env: NodeJS.ProcessEnv = {
    ...process.env, ...SERVICE_PROCESS_ENV, ...stack.env, TMPDIR: cache.tmp,
    ...(kind === 'api' ? { SILICO_API_PORT: String(port) } : { SILICO_WORKER_HEALTH_PORT: String(port) }),
  };
  delete env.NODE_COMPILE_CACHE;
  if (cache.compile) env.NODE_COMPILE_CACHE = cache.compile;
  const t0 = performance.now();
  const child = spawn(process.execPath, [...LOADERS[loader]!, path.join(REPO_ROOT, KINDS[kind])], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${kind} (${loader}) exited with ${child.exitCode} before it was ready (see the bench's log)`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
      if (ok) break;
      await sleep(5);
    }
    const ms = performance.now() - t0;
    await sleep(1000);
    return { ms, mib: treeRssMiB(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-loader-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  const say = (line: string) => process.stdout.write(`${line}\n`);
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({ exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`), serviceEnv: { LOG_LEVEL: 'warn' } });
    say(`bench:loader: Node ${process.versions.node}; tsx = ${LOADERS.tsx!.join(' ')}; node = ${LOADERS.node!.join(' ') || '(type stripping)'}; ${ROUNDS} rounds`);
    const results: Record<string, { ms: number[]; mib: number[] }> = {};
    const put = (k: string, r: { ms: number; mib: number }) => {
      results[k] ??= { ms: [], mib: [] };
      results[k].ms.push(r.ms);
      results[k].mib.push(r.mib);
    };
    const ratios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const order = round % 2 ? ['tsx', 'node'] : ['node', 'tsx'];
      const cold: Record<string, number> = {};
      for (const loader of order) {
        for (const kind of Object.keys(KINDS) as Kind[]) {
          // Cold: nothing cached. Warm: the same caches, filled by the cold start.
          const tmp = await mkdtemp(path.join(dir, `${loader}-${kind}-`));
          const cache = { tmp, compile: loader === 'node' ? path.join(tmp, 'compile-cache') : null };
          const c = await startOnce(stack, kind, loader, { tmp, compile: null }, log);
          const w = await startOnce(stack, kind, loader, cache, log);
          // Node's compile cache is filled by the first start that has it on.
          const warm = loader === 'node' ? await startOnce(stack, kind, loader, cache, log) : w;
          put(`${kind} ${loader} cold`, c);
          put(`${kind} ${loader} warm`, warm);
          if (kind === 'api') cold[loader] = c.ms;
          say(`  round ${round}: ${kind} on ${loader}: cold ${c.ms.toFixed(0)} ms, ${c.mib.toFixed(0)} MiB; warm ${warm.ms.toFixed(0)} ms, ${warm.mib.toFixed(0)} MiB`);
        }
      }
      ratios.push(cold.node! / cold.tsx!);
      say(`round ${round}: cold api start, Node / tsx = ${ratios.at(-1)!.toFixed(2)}`);
    }
    say('\nmedians (start to ready, memory once ready):');
    for (const [k, r] of Object.entries(results)) say(`  ${k.padEnd(18)} ${median(r.ms).toFixed(0).padStart(6)} ms  ${median(r.mib).toFixed(0).padStart(5)} MiB`);
    say(`\nmedian ratio, cold api start, Node's own / tsx: ${median(ratios).toFixed(2)}`);
  } finally {
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();

/**
 * `npm run bench:reuse`: what answering an identical run from a completed one costs,
 * against running it. Goal: a reused run completes in under 200 ms.
 *
 * One isolated stack; platform/microbial-growth (the real lab, sandboxed) run once with a
 * fixed seed. Reused: `POST /runs` (direct form, the same ref, inputs and seed, `reuse:
 * true`): its answer is already the completed run, so the latency is that request's.
 * Baseline, in the same run: the same request without `reuse`, then `GET /runs/{id}`
 * every BENCH_POLL_MS until it has completed. BENCH_N of each per round, BENCH_ROUNDS
 * rounds alternating which goes first; per round the medians; the median of the rounds'
 * ratios (reused / run) is printed last, after the reused median.
 *
 * Env: BENCH_N (20), BENCH_ROUNDS (3), BENCH_POLL_MS (20).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { createHttpClient } from './httpClient.ts';
import { median } from './stats.ts';

const N = Number(process.env.BENCH_N ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 20);
const BODY = { ref: 'platform/microbial-growth@1.0.0', inputs: { growth_rate: 0.25 }, seed: 11 };

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-reuse-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({
      exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`),
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', LOG_LEVEL: 'warn' },
    });
    const http = createHttpClient(stack.info.base_url.replace('//localhost:', '//127.0.0.1:'), { Authorization: `Bearer ${stack.info.api_key}` });
    const start = (reuse: boolean) => http.json('POST', '/runs', { ...BODY, reuse }, { 'Idempotency-Key': crypto.randomUUID() });
    const untilCompleted = async (id: string) => {
      for (;;) {
        const r = await http.json('GET', `/runs/${id}`);
        if (r.status === 'completed') return;
        if (['failed', 'cancelled', 'timed_out'].includes(r.status)) throw new Error(`run ${id} ${r.status}: ${JSON.stringify(r.error)}`);
        await sleep(POLL_MS);
      }
    };
    const ran = async () => {
      const t0 = performance.now();
      await untilCompleted((await start(false)).id);
      return performance.now() - t0;
    };
    const reused = async () => {
      const t0 = performance.now();
      const r = await start(true);
      const ms = performance.now() - t0;
      if (r.status !== 'completed') throw new Error(`a reused run answered ${r.status}: no identical completed run?`);
      return ms;
    };
    await ran(); // the source every reuse is answered from (and a warm-up)
    await reused();
    const ratios: number[] = [];
    const reusedMedians: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const t = { reused: [] as number[], ran: [] as number[] };
      for (let i = 0; i < N; i++) {
        const first = (round + i) % 2 === 0;
        if (first) t.reused.push(await reused());
        t.ran.push(await ran());
        if (!first) t.reused.push(await reused());
      }
      const a = median(t.reused);
      const b = median(t.ran);
      ratios.push(a / b);
      reusedMedians.push(a);
      process.stdout.write(`round ${round}: reused ${a.toFixed(1)} ms (max ${Math.max(...t.reused).toFixed(1)}); run ${b.toFixed(0)} ms; ratio ${(a / b).toFixed(3)}\n`);
    }
    process.stdout.write(`reused run completed in: median ${median(reusedMedians).toFixed(1)} ms (goal < 200)\n`);
    process.stdout.write(`median ratio (reused / run): ${median(ratios).toFixed(3)}\n`);
  } finally {
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});

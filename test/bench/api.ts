/**
 * `npm run bench:api`: what our request pipeline costs over a bare minimum.
 *
 * Starts an isolated local stack (rate limits lifted so nothing is throttled) and loads
 * `GET /v1/account` with autocannon over loopback. In the same run it loads a baseline:
 * a bare Koa app (one middleware) that, per request, runs the ONE SELECT our handler runs
 * (accountSummary, prepared, same Postgres) and answers a JSON body of the same shape and
 * size as ours. Ours additionally authenticates (key cache), counts rate limits (in its
 * memory: it is the stack's only api process, storage/db/rateCounting.ts), validates, logs
 * and wraps the envelope.
 * Rounds alternate ours/baseline so both share the machine's noise; each target is
 * warmed up first. autocannon runs in a worker thread so it does not share the
 * baseline's event loop. Each round prints the CPU each process spent per 1000 requests
 * (the bench process is the load generator, and for the baseline its server too). The
 * last line is the ratio of median req/s (goal >= 0.8).
 *
 * Env: BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_WARMUP (3), BENCH_CONNECTIONS (10),
 * BENCH_PROFILE (a folder: instead of the rounds, one load of ours with the api's V8 CPU
 * profile and Postgres's pg_stat_statements, reported per request, then one of the
 * baseline with its statements, whose window is printed: it runs in this process, so run the bench under
 * `node --cpu-prof` to read its profile).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Koa from 'koa';
import autocannon from 'autocannon';
import getPort from 'get-port';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import type pg from 'pg';
import { createDb, createPgPool } from '../../storage/db/knex.ts';
import { findKeyBySecret, type KeyPrincipal } from '../../storage/db/apiKeys.ts';
import { accountSummary } from '../../storage/db/accountSummary.ts';
import { utcDay } from '../../storage/db/rateLimits.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { isoTime } from '../../storage/ids.ts';

import { cpuSample, cpuPerUnit } from './cpu.ts';
import { profilingSettings, monotonicMicros, resetStatements, statementReport, cpuProfileReport, processNames } from './profile.ts';
import { median } from './stats.ts';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const PROFILE_DIR = process.env.BENCH_PROFILE ? path.resolve(process.env.BENCH_PROFILE) : undefined;
const profiling = PROFILE_DIR ? profilingSettings(PROFILE_DIR) : undefined;

interface Round { rps: number; p50: number; p99: number; total: number }

async function load(url: string, headers: Record<string, string>, duration: number): Promise<Round> {
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration, workers: 1 });
  const total = r['1xx'] + r['2xx'] + r['3xx'] + r['4xx'] + r['5xx'];
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0 || total === 0) {
    throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts of ${total} responses (status ${JSON.stringify(r.statusCodeStats)})`);
  }
  return { rps: total / r.duration, p50: r.latency.p50, p99: r.latency.p99, total };
}


type Json = Record<string, unknown>;

/**
 * The baseline: one middleware running exactly the SELECT our GET /account handler runs
 * (accountSummary, prepared, on a pg pool of the same size), answering the same JSON.
 * The account and key fields come from the row resolved once at start, as our key cache
 * serves them; nothing else is cached.
 */
function baselineApp(pool: pg.Pool, who: KeyPrincipal, sample: Json): Koa {
  const koa = new Koa({ proxy: false });
  const { account: a, key } = who;
  koa.use(async (ctx) => {
    if (ctx.get('Authorization') !== `Bearer ${secretInUse}`) { ctx.status = 401; ctx.body = { error: 'unknown key' }; return; }
    const day = utcDay();
    const s = await accountSummary(pool, a.id, key.id, day);
    ctx.body = {
      ...sample,
      account: { id: a.id, namespace: a.namespace, kind: a.kind, display_name: a.display_name, gateway_enabled: a.gateway_enabled, features: a.features, created_at: isoTime(a.created_at) },
      access: { key_id: key.id, key_prefix: key.prefix, client_id: key.client_id, scopes: key.scopes, expires_at: isoTime(key.expires_at), created_at: isoTime(key.created_at) },
      usage: { ...(sample.usage as Json), day, requests_today: { this_key: 0, account: s.requests_today_other_keys } },
      holdings: { compute: { available_usd: microsToUsd(s.available_micros), reserved_usd: microsToUsd(s.reserved_micros), spent_usd: microsToUsd(s.spent_micros) }, releases: s.releases },
      request_id: randomUUID(),
    };
  });
  return koa;
}
let secretInUse = '';

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-'));
  const logFile = path.join(dir, 'stack.log');
  const logStream = createWriteStream(logFile, { flags: 'a' });
  let stack: Stack | undefined;
  let pool: pg.Pool | undefined;
  let server: Server | undefined;
  let profiled: { from: number; to: number; units: number } | undefined;
  try {
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    console.log(`starting stack in ${dir} (log: ${logFile})`);
    stack = await startStack({
      exitOnSignal: true, dataDir: dir, mode: 'test', ports,
      sink: (source, line) => logStream.write(`[${source}] ${line}\n`),
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', LOG_LEVEL: 'warn' },
      serviceNodeArgs: profiling?.serviceNodeArgs,
      postgresSettings: profiling?.postgresSettings,
    });
    const { info } = stack;
    const headers = { Authorization: `Bearer ${info.api_key}` };
    // The api listens on 127.0.0.1; `localhost` may resolve to ::1 first.
    const oursUrl = `${info.base_url.replace('//localhost:', '//127.0.0.1:')}/account`;

    const res = await fetch(oursUrl, { headers });
    if (res.status !== 200) throw new Error(`GET /v1/account answered ${res.status}: ${await res.text()}`);
    const sampleText = await res.text();
    const sample = JSON.parse(sampleText) as Json;
    if (sample.object !== 'account' || !sample.account || !sample.access) throw new Error(`unexpected /v1/account body: ${sampleText}`);

    const db = createDb(info.database_url, { poolMax: 1 });
    const who = await findKeyBySecret(db, info.api_key);
    await db.destroy();
    if (!who) throw new Error('the stack key does not resolve');
    secretInUse = info.api_key;
    pool = createPgPool(info.database_url, 10); // the api process's hot-path pool has 10 too
    const basePort = await getPort();
    const koa = baselineApp(pool, who, sample);
    server = createServer(koa.callback());
    server.keepAliveTimeout = 65000;
    await new Promise<void>((ok) => server!.listen(basePort, '127.0.0.1', ok));
    const baseUrl = `http://127.0.0.1:${basePort}/v1/account`;
    const baseText = await (await fetch(baseUrl, { headers })).text();
    console.log(`body bytes: ours ${Buffer.byteLength(sampleText)}, baseline ${Buffer.byteLength(baseText)}`);

    const targets = [{ name: 'ours', url: oursUrl }, { name: 'baseline', url: baseUrl }] as const;
    for (const t of targets) await load(t.url, headers, WARMUP);
    if (PROFILE_DIR) {
      const pgDb = createDb(info.database_url, { poolMax: 1 });
      await resetStatements(pgDb);
      const from = monotonicMicros();
      const r = await load(oursUrl, headers, SECONDS);
      const to = monotonicMicros();
      console.log(`profile: ours ${r.rps.toFixed(0)} req/s, ${r.total} requests`);
      // Read before the baseline's load, which runs its own statement on the same Postgres.
      console.log(await statementReport(pgDb, r.total));
      await resetStatements(pgDb);
      // The baseline runs in this process: run it with --cpu-prof to read its profile over this window.
      const baseFrom = monotonicMicros();
      const b = await load(baseUrl, headers, SECONDS);
      console.log(`baseline ${b.rps.toFixed(0)} req/s, ${b.total} requests, window ${baseFrom}..${monotonicMicros()} (µs, monotonic)`);
      console.log(await statementReport(pgDb, b.total));
      await pgDb.destroy();
      // The api writes its profile as it exits: reported once the stack stopped.
      profiled = { from, to, units: r.total };
      return;
    }
    const rounds: Record<string, Round[]> = { ours: [], baseline: [] };
    console.log(`${ROUNDS} rounds x ${SECONDS}s, ${CONNECTIONS} connections, after ${WARMUP}s warm-up each`);
    console.log('round  target    req/s     p50 ms  p99 ms  requests');
    for (let i = 1; i <= ROUNDS; i++) {
      const order = i % 2 ? targets : [...targets].reverse();
      for (const t of order) {
        const before = cpuSample(stack.supervisor);
        const r = await load(t.url, headers, SECONDS);
        const cpu = cpuPerUnit(before, cpuSample(stack.supervisor), r.total / 1000);
        rounds[t.name]!.push(r);
        console.log(`${String(i).padEnd(7)}${t.name.padEnd(10)}${r.rps.toFixed(0).padStart(6)}  ${r.p50.toFixed(1).padStart(8)}${r.p99.toFixed(1).padStart(8)}  ${String(r.total).padStart(8)}  CPU ms per 1000: ${cpu}`);
      }
    }
    const ours = median(rounds.ours!.map((r) => r.rps));
    const base = median(rounds.baseline!.map((r) => r.rps));
    console.log(`median req/s: ours ${ours.toFixed(0)}, baseline ${base.toFixed(0)}`);
    console.log(`ratio (ours/baseline req/s median): ${(ours / base).toFixed(2)}  goal >= 0.8`);
  } finally {
    if (server) { server.closeAllConnections(); await new Promise((ok) => server!.close(ok)); }
    await pool?.end();
    const names = stack ? processNames(stack) : new Map<number, string>();
    await stack?.stop();
    if (profiled) console.log(await cpuProfileReport(PROFILE_DIR!, names, profiled, profiled.units));
    await new Promise((ok) => logStream.end(ok));
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`bench:api failed: ${(err as Error).stack ?? err}`);
  process.exit(1);
});

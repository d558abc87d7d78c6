/**
 * `npm run bench:console`: the console's first render of a run with 10,000 points per
 * series, in Debian's chromium on this machine. Goal: under 1 s.
 *
 * The run: the built-in SIR lab with its communication step shortened so that each of its
 * three outputs has 10,001 points, run once through the API. Ours: a fresh browser
 * context (nothing cached) opens /console/runs/<id> signed in, and the time is
 * `performance.now()` (ms since the navigation started) when every chart holds its 10,001
 * points and has drawn. Baseline, in the same run: the least a page can do for the same
 * sight (test/bench/consoleBaseline: plain fetch, d3-dsv, uPlot; no SDK, no verified
 * download, no router), served from the same origin. BENCH_N loads of each per round,
 * BENCH_ROUNDS rounds alternating which goes first; per round the median of each; the
 * median of the rounds' ratios (ours / baseline) is printed last, after our median.
 *
 * Env: BENCH_N (10), BENCH_ROUNDS (3).
 */
import { createWriteStream } from 'node:fs';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { build } from 'vite';
import { parse, stringify } from 'yaml';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { browserExecutable, buildConsole } from '../browser/browser.ts';
import { createHttpClient } from './httpClient.ts';
import { labWorkspace } from './labWorkspace.ts';
import { median } from './stats.ts';

const N = Number(process.env.BENCH_N ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POINTS = 10_001;

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** labs/sir-epidemic with 10,000 communication steps over its 160 days. */
async function denseLab(dir: string): Promise<string> {
  const lab = path.join(dir, 'dense-sir');
  await cp(path.join(REPO_ROOT, 'labs/sir-epidemic'), lab, { recursive: true, filter: (p) => !p.includes('__pycache__') });
  const manifest = parse(await readFile(path.join(lab, 'lab.yaml'), 'utf8')) as { runtime: { duration: number; communication_step: number } };
  manifest.runtime.communication_step = manifest.runtime.duration / (POINTS - 1);
  await writeFile(path.join(lab, 'lab.yaml'), stringify(manifest));
  return lab;
}

/** Milliseconds from navigation to every chart drawn, in a context of its own (a cold cache). */
async function firstRender(browser: Browser, origin: string, key: string, url: string, drawn: (page: Page) => Promise<void>, baseline?: string): Promise<number> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    if (baseline) {
      await context.route(`${origin}/bench-baseline/**`, async (route) => {
        const rel = new URL(route.request().url()).pathname.replace('/bench-baseline/', '') || 'index.html';
        const type = rel.endsWith('.js') ? 'text/javascript' : rel.endsWith('.css') ? 'text/css' : 'text/html';
        await route.fulfill({ body: await readFile(path.join(baseline, rel)), contentType: type });
      });
    }
    await context.addInitScript((k) => sessionStorage.setItem('silico.apiKey', k), key);
    const page = await context.newPage();
    await page.goto(url);
    await drawn(page);
    return await page.evaluate(() => performance.now());
  } finally {
    await context.close();
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-console-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  let browser: Browser | undefined;
  try {
    await buildConsole();
    const baselineDist = path.join(dir, 'baseline');
    await build({ root: path.join(REPO_ROOT, 'test/bench/consoleBaseline'), base: '/bench-baseline/', logLevel: 'warn', build: { outDir: baselineDist, emptyOutDir: true, target: 'es2022' } });
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({
      exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`),
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', LOG_LEVEL: 'warn' },
    });
    const base = stack.info.base_url.replace('//localhost:', '//127.0.0.1:');
    const origin = new URL(base).origin;
    const key = stack.info.api_key;
    const http = createHttpClient(base, { Authorization: `Bearer ${key}` });
    const ws = await labWorkspace(http, await denseLab(dir), 'bench console');
    const plan = await http.json('POST', '/run-plans', { workspace_id: ws.workspace_id, revision_id: ws.revision_id, inputs: { beta: 0.5, gamma: 0.2 } });
    const run = await http.json('POST', '/runs', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
    for (;;) {
      const r = await http.json('GET', `/runs/${run.id}`);
      if (r.status === 'completed') break;
      if (['failed', 'cancelled', 'timed_out'].includes(r.status)) throw new Error(`the dense run ${r.status}: ${JSON.stringify(r.error)}`);
      await sleep(200);
    }
    browser = await chromium.launch({ executablePath: await browserExecutable(), args: ['--no-sandbox'] });
    const b = browser;
    const allDrawn = async (page: Page) => {
      await page.waitForFunction((n) => {
        const charts = [...document.querySelectorAll('figure.chart')];
        return charts.length === 3 && charts.every((c) => c.getAttribute('data-points') === String(n) && c.querySelector('canvas'));
      }, POINTS, { timeout: 30_000, polling: 'raf' });
    };
    const ours = () => firstRender(b, origin, key, `${origin}/console/runs/${run.id}`, allDrawn);
    const bare = () => firstRender(b, origin, key, `${origin}/bench-baseline/index.html#${run.id}`, async (page) => {
      await page.waitForFunction(() => document.body.dataset.drawn === 'true', undefined, { timeout: 30_000, polling: 'raf' });
    }, baselineDist);
    await ours();
    await bare();
    const ratios: number[] = [];
    const ourMedians: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const times = { ours: [] as number[], bare: [] as number[] };
      for (let i = 0; i < N; i++) {
        const first = (round + i) % 2 === 0;
        if (first) times.ours.push(await ours());
        times.bare.push(await bare());
        if (!first) times.ours.push(await ours());
      }
      const o = median(times.ours);
      const b2 = median(times.bare);
      ratios.push(o / b2);
      ourMedians.push(o);
      process.stdout.write(`round ${round}: console ${o.toFixed(0)} ms (min ${Math.min(...times.ours).toFixed(0)}, max ${Math.max(...times.ours).toFixed(0)}); baseline ${b2.toFixed(0)} ms; ratio ${(o / b2).toFixed(2)}\n`);
    }
    process.stdout.write(`first render of ${POINTS.toLocaleString('en-US')} points per series x 3: console median ${median(ourMedians).toFixed(0)} ms (goal < 1000)\n`);
    process.stdout.write(`median ratio (console / baseline): ${median(ratios).toFixed(2)}\n`);
  } finally {
    await browser?.close();
    await stack?.stop();
    log.end();
    await rm(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});

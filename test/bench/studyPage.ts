/**
 * `npm run bench:study-page`: the console's page of a finished 1,280-run sensitivity study,
 * in Debian's chromium on this machine (issue 46). Goals: interactive within 2 s, its
 * indices above the fold, at most three screens tall, no serious axe violation.
 *
 * The study: a Sobol' study of the Ishigami lab (test/fixtures/labs/ishigami: three inputs
 * on [-π, π], one output), base sample 256, so 1,280 runs, through the API to its end.
 * Ours: a fresh browser context (nothing cached) opens /console/experiments/<id> signed in,
 * at 1280 x 900; the time is `performance.now()` (ms since the navigation started) when
 * the indices are drawn and the first page of the runs table is there to sort. Baseline,
 * in the same run: the least a page can do for that sight (test/bench/studyPageBaseline:
 * plain fetch of the study and one page of its runs, Observable Plot, a plain table),
 * served from the same origin. Once: the page's height in screens when every picture is
 * drawn, where its indices end, and axe-core's serious and critical violations. BENCH_N
 * loads of each per round, BENCH_ROUNDS rounds alternating which goes first; per round the
 * median of each; our median and the median of the rounds' ratios (ours / baseline) last.
 *
 * Env: BENCH_N (10), BENCH_ROUNDS (3), BENCH_RUNS (1280).
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { build } from 'vite';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';
import { startStack, type Stack } from '../../deploy/local/stack.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { browserExecutable, buildConsole } from '../browser/browser.ts';
import { createHttpClient } from './httpClient.ts';
import { labWorkspace } from './labWorkspace.ts';
import { median } from './stats.ts';

const N = Number(process.env.BENCH_N ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const RUNS = Number(process.env.BENCH_RUNS ?? 1280);
const VIEWPORT = { width: 1280, height: 900 };
const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/ishigami');

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** A signed-in context of its own (a cold cache), the baseline's files served from `baseline` when given. */
async function freshContext(browser: Browser, origin: string, key: string, baseline?: string): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  if (baseline) {
    await context.route(`${origin}/bench-baseline/**`, async (route) => {
      const rel = new URL(route.request().url()).pathname.replace('/bench-baseline/', '') || 'index.html';
      const type = rel.endsWith('.js') ? 'text/javascript' : rel.endsWith('.css') ? 'text/css' : 'text/html';
      await route.fulfill({ body: await readFile(path.join(baseline, rel)), contentType: type });
    });
  }
  await context.addInitScript((k) => sessionStorage.setItem('silico.apiKey', k), key);
  return context;
}

/** Milliseconds from navigation until `ready` holds. */
async function timeToReady(browser: Browser, origin: string, key: string, url: string, ready: (page: Page) => Promise<void>, baseline?: string): Promise<number> {
  const context = await freshContext(browser, origin, key, baseline);
  try {
    const page = await context.newPage();
    await page.goto(url);
    await ready(page);
    return await page.evaluate(() => performance.now());
  } finally {
    await context.close();
  }
}

/** Our page is interactive: the indices drawn, and the runs table's first page there to sort. */
async function oursReady(page: Page): Promise<void> {
  await page.waitForFunction(() => Boolean(document.querySelector('figure.chart[data-chart="y"] svg'))
    && document.querySelectorAll('table.study-runs tbody tr').length === 20
    && !document.querySelector('table.study-runs')?.getAttribute('aria-busy')?.startsWith('t'), undefined, { timeout: 30_000, polling: 'raf' });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-bench-study-page-'));
  const log = createWriteStream(path.join(dir, 'stack.log'));
  let stack: Stack | undefined;
  let browser: Browser | undefined;
  try {
    await buildConsole();
    const baselineDist = path.join(dir, 'baseline');
    await build({ root: path.join(REPO_ROOT, 'test/bench/studyPageBaseline'), base: '/bench-baseline/', logLevel: 'warn', build: { outDir: baselineDist, emptyOutDir: true, target: 'es2022' } });
    const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
    stack = await startStack({
      exitOnSignal: true, dataDir: dir, mode: 'test', ports, sink: (s, l) => log.write(`[${s}] ${l}\n`),
      serviceEnv: { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', LOG_LEVEL: 'warn' },
    });
    const base = stack.info.base_url.replace('//localhost:', '//127.0.0.1:');
    const origin = new URL(base).origin;
    const key = stack.info.api_key;
    const http = createHttpClient(base, { Authorization: `Bearer ${key}` });
    const ws = await labWorkspace(http, LAB, 'bench study page');
    const t0 = performance.now();
    const plan = await http.json('POST', '/experiment-plans', {
      name: 'Which input moves y', lab: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: 60 },
      sensitivity: { parameters: ['x1', 'x2', 'x3'].map((input) => ({ input, low: -Math.PI, high: Math.PI })), outputs: [{ output: 'y', summary: 'value' }], method: 'sobol', base_sample: RUNS / 5, seed: 46 },
    });
    if (plan.status !== 'ready') throw new Error(`study plan blocked: ${JSON.stringify(plan.findings)}`);
    const e = await http.json('POST', '/experiments', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
    for (;;) {
      const read = await http.json('GET', `/experiments/${e.id}`);
      if (read.completed_at) {
        if (read.run_totals.completed !== RUNS) throw new Error(`study ${e.id}: ${JSON.stringify(read.run_totals)}`);
        break;
      }
      await sleep(1000);
    }
    process.stdout.write(`a ${RUNS}-run Sobol' study of the Ishigami lab completed in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);

    browser = await chromium.launch({ executablePath: await browserExecutable(), args: ['--no-sandbox'] });
    const b = browser;
    const ourUrl = `${origin}/console/experiments/${e.id}`;
    const ours = () => timeToReady(b, origin, key, ourUrl, oursReady);
    const bare = () => timeToReady(b, origin, key, `${origin}/bench-baseline/index.html#${e.id}`, async (page) => {
      await page.waitForFunction(() => document.body.dataset.drawn === 'true', undefined, { timeout: 30_000, polling: 'raf' });
    }, baselineDist);

    // The page as a reader finds it once every picture is drawn.
    const context = await freshContext(b, origin, key);
    const page = await context.newPage();
    await page.goto(ourUrl);
    await oursReady(page);
    await page.waitForFunction(() => document.querySelectorAll('figure.chart[data-chart^="y against "] svg').length === 3, undefined, { timeout: 60_000 });
    const shape = await page.evaluate(() => ({
      screens: document.documentElement.scrollHeight / window.innerHeight,
      indicesEnd: document.querySelector('figure.chart[data-chart="y"]')!.getBoundingClientRect().bottom,
      viewport: window.innerHeight,
    }));
    const axe = (await new AxeBuilder({ page }).analyze()).violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    await context.close();
    process.stdout.write(`page: ${shape.screens.toFixed(2)} screens tall (goal <= 3); the indices end ${shape.indicesEnd.toFixed(0)} px down a ${shape.viewport} px screen (${shape.indicesEnd <= shape.viewport ? 'above' : 'below'} the fold); serious axe violations: ${axe.length ? axe.map((v) => v.id).join(', ') : 'none'}\n`);

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
    process.stdout.write(`interactive, a ${RUNS}-run study's page: console median ${median(ourMedians).toFixed(0)} ms (goal <= 2000)\n`);
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

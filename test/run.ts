import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import getPort from 'get-port';
import { runningStack, startStack } from '../deploy/local/stack.ts';
import { ensurePrerequisites, stackPrerequisites, SUITE_PREREQUISITES } from '../deploy/local/prerequisites.ts';
import { REPO_ROOT } from '../deploy/local/paths.ts';
import { serveBiologySources } from './biologyControl.ts';
import { captureHistories } from './replayCapture.ts';
import { resolveBinary } from '../deploy/local/binaries.ts';
import { shareNodeCompileCache } from '../deploy/local/compileCache.ts';
import { kubernetesSchemas } from '../deploy/local/kubernetesSchemas.ts';
import { pythonTool } from '../deploy/local/pythonTools.ts';
import { runFiles, type Schedule } from './schedule.ts';
import { checkWorkflowSummaries } from './workflowSummaries.ts';

/**
 * `npm test`: Node's test runner has no global setup, so this script is it. It starts one
 * isolated stack (free ports, a temporary data dir, the same code as `npm start`) shared
 * by every file, puts its addresses and the operator key in the environment, runs the
 * labs' pytest beside the test files, runs the files concurrently (test/schedule.ts says
 * which run alone and why), tears the stack down whatever happened, and exits non-zero
 * when anything failed.
 *
 *   npm test                              everything
 *   npm test -- test/unit                 the files under these paths
 *   npm test -- --only <pattern>          the files whose path has <pattern>, or else the
 *                                         tests named by it; attached to the stack
 *                                         `npm start` is running when there is one, and
 *                                         without the labs' pytest
 */
const ROOTS = ['test/unit', 'test/workflow', 'test/replay', 'test/integration', 'test/browser'];

/**
 * What test files build or install on first use (the cluster topology's Temporal server
 * and schema tool, the manifests' validators), made ready beside the stack's own start:
 * on a fresh machine no Go build runs while timed tests do, and none twice at once.
 */
function suiteTools(say: (l: string) => void): Promise<unknown> {
  return Promise.all([
    resolveBinary('temporal-server', say), resolveBinary('temporal-sql-tool', say), resolveBinary('temporal-ui-server', say), resolveBinary('kubeconform', say), kubernetesSchemas(say),
    pythonTool(path.join(REPO_ROOT, 'deploy/docker/lint-tools.lock'), 'hadolint'),
  ]);
}

/** A test child is stopped when this process exits (a signal stops the stack, then exits). */
function endsWithUs(child: ChildProcess): ChildProcess {
  const stop = () => child.kill('SIGTERM');
  process.once('exit', stop);
  child.once('exit', () => process.removeListener('exit', stop));
  return child;
}

async function testFiles(roots: string[]): Promise<string[]> {
  const out: string[] = [];
  const walk = async (p: string): Promise<void> => {
    const s = await stat(p);
    if (s.isFile()) {
      if (p.endsWith('.test.ts')) out.push(p);
      return;
    }
    for (const e of (await readdir(p)).sort()) await walk(path.join(p, e));
  };
  for (const r of roots) await walk(path.resolve(REPO_ROOT, r));
  return out;
}

/** `--only`: the files whose path has the pattern; else the files whose source names a test by it. */
async function onlyFiles(all: string[], pattern: string): Promise<{ files: string[]; namePattern?: string }> {
  const byPath = all.filter((f) => path.relative(REPO_ROOT, f).includes(pattern));
  if (byPath.length) return { files: byPath };
  const bySource: string[] = [];
  for (const f of all) if ((await readFile(f, 'utf8')).includes(pattern)) bySource.push(f);
  return { files: bySource, namePattern: pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') };
}

function pytest(python: string, env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise<number>((resolve) => {
    const child = endsWithUs(spawn(python, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'labs'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    child.stdout!.on('data', (b: Buffer) => { out += b.toString(); });
    child.stderr!.on('data', (b: Buffer) => { out += b.toString(); });
    child.on('exit', (c) => {
      process.stdout.write(out.split('\n').filter(Boolean).map((l) => `[labs] ${l}\n`).join(''));
      resolve(c ?? 1);
    });
  });
}

async function main(): Promise<number> {
  shareNodeCompileCache();
  const { values, positionals } = parseArgs({ options: { only: { type: 'string' } }, allowPositionals: true });
  const all = await testFiles(positionals.length ? positionals : ROOTS);
  const picked = values.only ? await onlyFiles(all, values.only) : { files: all };
  if (!picked.files.length) {
    process.stdout.write(`no test file or test matches ${JSON.stringify(values.only)}\n`);
    return 1;
  }
  const say = (l: string) => process.stdout.write(`[stack] ${l}\n`);
  // A stack `npm start` is running: one file or test answers in seconds against it.
  const localData = path.resolve(process.env.SILICO_DATA_DIR ?? path.join(REPO_ROOT, '.data'));
  const attached = values.only ? await runningStack(localData) : null;
  if (attached) say(`attached to the stack npm start is running (${attached.info.base_url})`);
  else {
    // Everything the machine needs, installed (as root) or named with its install command
    // before anything starts: the stack's packages and the suite's own (chromium, HAProxy).
    await ensurePrerequisites([...await stackPrerequisites(process.env, true), ...SUITE_PREREQUISITES], (l) => process.stdout.write(`[setup] ${l}\n`));
  }

  const dataDir = await mkdtemp(path.join(tmpdir(), 'silico-test-'));
  const log = createWriteStream(path.join(dataDir, 'stack.log'));
  // The last lines of each process, printed when it dies under the suite (CI shows only
  // what the suite prints; the log file stays on the machine).
  const recent = new Map<string, string[]>();
  const sink = (source: string, line: string) => {
    log.write(`${source.padEnd(8)}| ${line}\n`);
    if (source === 'stack') say(line);
    const lines = recent.get(source) ?? [];
    lines.push(line);
    if (lines.length > 80) lines.shift();
    recent.set(source, lines);
  };
  const stopped = new AbortController();
  const started = Date.now();
  let biology: Awaited<ReturnType<typeof serveBiologySources>> | undefined;
  let stack: Awaited<ReturnType<typeof startStack>> | undefined;
  let code = 1;
  try {
    let stackEnv: Record<string, string>;
    let info: { base_url: string; api_key: string; temporal_address: string };
    let temporalBin: string;
    let biologyEnv: Record<string, string> = {};
    const tools = values.only ? undefined : suiteTools(say);
    // Awaited with the stack, never left unobserved if the stack fails first.
    tools?.catch(() => undefined);
    if (attached) {
      ({ env: stackEnv, info } = attached);
      temporalBin = attached.binaries.temporal;
    } else {
      // The stack's biology sources are a local fixture server (the test configuration: the
      // only one whose sources may be private addresses).
      biology = await serveBiologySources();
      biologyEnv = biology.env;
      const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: await getPort(), minio: await getPort(), minioConsole: await getPort() };
      stack = await startStack({
        dataDir, ports, mode: 'test', exitOnSignal: true, sink,
        serviceEnv: { LOG_LEVEL: 'warn', SILICO_RATE_READS_PER_MIN: '100000', SILICO_RATE_RUNS_PER_MIN: '100000', SILICO_RATE_DAILY: '1000000', SILICO_SESSION_HISTORY_BOUND: '400', SILICO_DRAIN_MS: '0',
          // Webhook receivers are local test servers; retries are quick and give up after seconds, not a day.
          SILICO_WEBHOOK_ALLOW_PRIVATE: '1', SILICO_WEBHOOK_FIRST_RETRY_MS: '200', SILICO_WEBHOOK_MAX_RETRY_MS: '1000', SILICO_WEBHOOK_RETRY_FOR_MS: '6000',
          ...biology.env },
      });
      ({ env: stackEnv, info } = stack);
      temporalBin = stack.binaries.temporal;
      // A process of the shared stack that ends under the suite fails every file after it:
      // say which and why at once, and stop the run instead of letting files hang on it.
      stack.supervisor.watch((p, exit) => {
        say(`${p.name} exited (${exit}) while the suite ran; its last lines:`);
        process.stdout.write((recent.get(p.name) ?? []).map((l) => `[${p.name}] ${l}\n`).join(''));
        stopped.abort(new Error(`the shared stack's ${p.name} exited (${exit})`));
      });
      say(`ready in ${Math.round((Date.now() - started) / 1000)}s; logs: ${path.join(dataDir, 'stack.log')}`);
    }
    const env = {
      ...process.env,
      ...stackEnv,
      SILICO_TEST_BASE_URL: info.base_url,
      SILICO_TEST_API_KEY: info.api_key,
      SILICO_TEST_DATA_DIR: attached ? localData : dataDir,
      SILICO_TEST_TEMPORAL_BIN: temporalBin,
      // The stack's workers' health ports, where each serves its metrics (none when attached to npm start's).
      SILICO_TEST_WORKER_PORTS: stack?.workers.map((w) => w.port).join(',') ?? '',
      ...(biologyEnv.SILICO_TEST_BIOLOGY_CONTROL ? { SILICO_TEST_BIOLOGY_CONTROL: biologyEnv.SILICO_TEST_BIOLOGY_CONTROL } : {}),
    };
    await tools;
    // The built-in labs' own known-answer tests, in the lab runtime, beside the files.
    const labs = values.only ? Promise.resolve(0) : pytest(stackEnv.SILICO_PYTHON!, env);
    const schedule: Schedule = await runFiles(picked.files, { env, namePattern: picked.namePattern, stop: stopped.signal });
    const labsCode = await labs;
    // Every workflow the files started explains itself to operators, and says nothing it should not.
    const summaries = attached ? { checked: 0, problems: [] } : await checkWorkflowSummaries(info.temporal_address, stackEnv.DATABASE_URL!, !values.only && !positionals.length);
    if (!attached) process.stdout.write(`[operators] ${summaries.checked} workflows checked for their summary and details: ${summaries.problems.length ? `${summaries.problems.length} problems` : 'all explain themselves'}\n`);
    for (const p of summaries.problems.slice(0, 50)) process.stdout.write(`[operators] ${p}\n`);
    code = schedule.failed || schedule.notRun.length || labsCode || summaries.problems.length ? 1 : 0;
    if (labsCode) process.stdout.write(`[labs] pytest failed (exit ${labsCode})\n`);
    if (process.env.SILICO_CAPTURE_HISTORIES) {
      const types = await captureHistories(info.temporal_address, temporalBin, path.resolve(REPO_ROOT, process.env.SILICO_CAPTURE_HISTORIES));
      process.stdout.write(`[replay] histories captured: ${types.join(', ')}\n`);
    }
  } finally {
    await stack?.stop();
    await biology?.close();
    log.end();
    if (code === 0 && !process.env.SILICO_KEEP_TEST_DATA) await rm(dataDir, { recursive: true, force: true });
    else process.stdout.write(`[stack] test data and logs kept in ${dataDir}\n`);
  }
  return code;
}

main().then((c) => process.exit(c), (err) => {
  console.error(err);
  process.exit(1);
});

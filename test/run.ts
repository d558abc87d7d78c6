import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import getPort from 'get-port';
import { startStack } from '../deploy/local/stack.ts';
import { REPO_ROOT } from '../deploy/local/bootstrap.ts';
import { serveBiologySources } from './biologyControl.ts';
import { captureHistories } from './replayCapture.ts';

/**
 * `npm test`: Node's test runner has no global setup, so this script is it. It starts an
 * isolated stack (free ports, a temporary data dir, the same code as `npm start`), puts
 * its addresses and the operator key in the environment, runs every test file with
 * `node --test`, tears the stack down whatever happened, and exits with the runner's code.
 * Arguments narrow the files: `npm test -- test/unit`.
 */
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

async function main(): Promise<number> {
  const files = await testFiles(process.argv.slice(2).length ? process.argv.slice(2) : ['test/unit', 'test/workflow', 'test/replay', 'test/integration', 'test/browser']);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'silico-test-'));
  const logFile = path.join(dataDir, 'stack.log');
  const log = createWriteStream(logFile);
  const sink = (source: string, line: string) => {
    log.write(`${source.padEnd(8)}| ${line}\n`);
    if (source === 'stack') process.stdout.write(`[stack] ${line}\n`);
  };
  const ports = { api: await getPort(), postgres: await getPort(), temporal: await getPort(), temporalUi: null, minio: await getPort(), minioConsole: await getPort() };
  const started = Date.now();
  // The stack's biology sources are a local fixture server (the test configuration: the
  // only one whose sources may be private addresses).
  const biology = await serveBiologySources();
  const stack = await startStack({
    dataDir, ports, mode: 'test', exitOnSignal: true, sink,
    serviceEnv: { LOG_LEVEL: 'warn', SILICO_RATE_READS_PER_MIN: '100000', SILICO_RATE_RUNS_PER_MIN: '100000', SILICO_RATE_DAILY: '1000000', SILICO_SESSION_HISTORY_BOUND: '400', SILICO_DRAIN_MS: '0',
      // Webhook receivers are local test servers; retries are quick and give up after seconds, not a day.
      SILICO_WEBHOOK_ALLOW_PRIVATE: '1', SILICO_WEBHOOK_FIRST_RETRY_MS: '200', SILICO_WEBHOOK_MAX_RETRY_MS: '1000', SILICO_WEBHOOK_RETRY_FOR_MS: '6000',
      ...biology.env },
  });
  process.stdout.write(`[stack] ready in ${Math.round((Date.now() - started) / 1000)}s; logs: ${logFile}\n`);
  let code = 1;
  try {
    const env = {
      ...process.env,
      ...stack.env,
      SILICO_TEST_BASE_URL: stack.info.base_url,
      SILICO_TEST_API_KEY: stack.info.api_key,
      SILICO_TEST_DATA_DIR: dataDir,
      SILICO_TEST_TEMPORAL_BIN: stack.binaries.temporal,
      SILICO_TEST_BIOLOGY_CONTROL: biology.env.SILICO_TEST_BIOLOGY_CONTROL!,
    };
    // The built-in labs' own known-answer tests, in the lab runtime environment.
    const pytest = await new Promise<number>((resolve) => {
      const child = endsWithUs(spawn(stack.env.SILICO_PYTHON!, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'labs'], { cwd: REPO_ROOT, env, stdio: 'inherit' }));
      child.on('exit', (c) => resolve(c ?? 1));
    });
    code = await new Promise<number>((resolve) => {
      const child = endsWithUs(spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=1', ...files], { cwd: REPO_ROOT, env, stdio: 'inherit' }));
      child.on('exit', (c) => resolve(c ?? 1));
    });
    if (pytest !== 0) {
      process.stdout.write(`[labs] pytest failed (exit ${pytest})\n`);
      code = code || pytest;
    }
    if (process.env.SILICO_CAPTURE_HISTORIES) {
      const types = await captureHistories(stack.info.temporal_address, stack.binaries.temporal, path.resolve(REPO_ROOT, process.env.SILICO_CAPTURE_HISTORIES));
      process.stdout.write(`[replay] histories captured: ${types.join(', ')}\n`);
    }
  } finally {
    await stack.stop();
    await biology.close();
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

import { cpus } from 'node:os';
import path from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { REPO_ROOT } from '../deploy/local/paths.ts';

/**
 * How `npm test` runs its files on the one shared stack: several at once (each file is
 * its own process and works in accounts, namespaces, compute profiles, task queues and
 * sandbox uids of its own), longest first, except as the two tables below say.
 */

/** Files that run alone, and why: each takes the whole machine or disturbs every other file. */
export const ALONE: Record<string, string> = {
  'test/integration/noticeWatch.test.ts':
    'terminates the shared Postgres LISTEN connection of every api process to prove the event watch reconnects: any other file streaming run events at that moment would see the drop',
  'test/integration/skillIntegrity.test.ts':
    'tampers with a built-in skill, the whole service\'s: while it does, every skill read (GET /skills of the auth, fuzz and MCP tests) fails',
};

/**
 * Fixtures of the shared stack that one file at a time drives, and the files that drive
 * them: such files never run beside each other, but beside any other file.
 */
export const ONE_AT_A_TIME: Record<string, string[]> = {
  // The biology fixture server behind the stack's sources: a file sets a source failing,
  // slow or throttled (test/biologyControl.ts) for the whole stack while it checks that.
  'the biology fixture sources': ['test/integration/biology.test.ts', 'test/integration/hostingDoors.test.ts'],
  // The machine's hosted deployments: a file counts the processes their warm instances
  // fork for invocations, whoever's deployment forked them (/proc has no owner to tell).
  'the machine\'s warm deployments': ['test/integration/invocations.test.ts', 'test/integration/hostedInvocations.test.ts'],
  // Not the shared stack's: each of these files starts the production topology of its own
  // (Temporal's four services, MinIO on four drives, two apis, two worker machines). Two at
  // once would take a 2-core machine's cores from every other file.
  'a cluster topology of its own': ['test/integration/cluster.test.ts', 'test/integration/clusterStudies.test.ts'],
};

/**
 * The longest files, longest first (as a clean clone's `npm test` on a 2-core machine
 * measured them, test/bench/RESULTS.md),
 * so no long file starts late and leaves the other slots idle at the end; the rest follow
 * in path order. The files of ALONE run first, one by one, before any other starts.
 */
export const LONGEST_FIRST = [
  'test/integration/faults.test.ts',
  'test/browser/console.test.ts',
  'test/integration/clusterStudies.test.ts',
  // Longer still on a machine that has not built its labs' environments yet (tellurium's is large).
  'test/integration/labEnvironments.test.ts',
  'test/integration/guides.test.ts',
  'test/integration/sensitivityOverTime.test.ts',
  'test/integration/invocations.test.ts',
  'test/integration/petabChaos.test.ts',
  'test/integration/cluster.test.ts',
  'test/integration/petabEngine.test.ts',
  'test/integration/studies.test.ts',
  'test/integration/petabCalibration.test.ts',
  'test/integration/chaos.test.ts',
  'test/integration/petabImport.test.ts',
  'test/unit/sensitivityMethods.test.ts',
  'test/integration/sandbox.test.ts',
  'test/browser/temporalUi.test.ts',
  'test/integration/experiments.test.ts',
  'test/integration/largeOutputs.test.ts',
  'test/integration/runFailures.test.ts',
  'test/integration/labFormat.test.ts',
  'test/workflow/study.test.ts',
  'test/integration/environmentBuild.test.ts',
  'test/workflow/endings.test.ts',
  'test/integration/runbook.test.ts',
  'test/integration/hostedInvocations.test.ts',
  'test/integration/workerDatabaseOutage.test.ts',
  'test/integration/webhooks.test.ts',
];

export interface FileResult { file: string; ms: number; passed: number; failed: number; skipped: number; /** Each failed test's name and the head of its error, repeated at the report's end. */ failures: string[] }

/** The longest a file may take (the longest takes about 4 minutes on a 2-core machine). */
const FILE_LIMIT_MS = 20 * 60_000;
export interface Schedule { passed: number; failed: number; skipped: number; files: FileResult[]; ms: number; /** Files never started (the run was stopped). */ notRun: string[] }

const rel = (f: string) => path.relative(REPO_ROOT, f);

/** The machine's CPU time so far, busy and in all, over every core (ms). */
function cpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const { times: t } of cpus()) {
    busy += t.user + t.nice + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return { busy, total };
}

/** The first lines of a failure's error (node:test wraps a test's own error as its cause). */
function failureHead(error: unknown): string {
  const e = error as { cause?: unknown; message?: string } | undefined;
  const inner = e?.cause instanceof Error ? e.cause : e;
  const text = inner instanceof Error ? (inner.stack ?? inner.message) : String(inner?.message ?? inner);
  return text.split('\n').slice(0, 6).join('\n    ');
}

/** One file in its own test process: its spec output printed whole when it ends, and its counts. */
async function runFile(file: string, namePattern: string | undefined, stop: AbortSignal, limitMs: number, write: (text: string) => void): Promise<FileResult> {
  const result: FileResult = { file: rel(file), ms: 0, passed: 0, failed: 0, skipped: 0, failures: [] };
  const started = Date.now();
  // A file that hangs (a hook awaiting a dead stack) is cancelled after its limit, and
  // every running file when the run is stopped: the suite always ends with its report.
  const limit = AbortSignal.timeout(limitMs);
  const signal = AbortSignal.any([limit, stop]);
  const stream = run({ files: [file], concurrency: 1, signal, ...(namePattern ? { testNamePatterns: [namePattern] } : {}) });
  stream.on('test:pass', (d) => {
    if (d.name === d.file || d.details.type === 'suite') return;
    if (d.skip || d.todo) result.skipped += 1;
    else result.passed += 1;
  });
  // A file that fails outside any test (it did not load, a hook threw, activity after its
  // tests ended) counts as one failure when none of its tests failed.
  let fileFailed = false;
  stream.on('test:fail', (d) => {
    if (d.details.type === 'suite') return;
    if (d.name === d.file) fileFailed = true;
    else result.failed += 1;
    result.failures.push(`${d.name}: ${failureHead(d.details.error)}`);
  });
  let out = '';
  for await (const chunk of stream.compose(new spec())) out += String(chunk);
  result.ms = Date.now() - started;
  if (fileFailed && result.failed === 0) result.failed = 1;
  const cut = limit.aborted ? `cancelled after ${limitMs / 1000} s` : stop.aborted ? `cancelled: ${(stop.reason as Error).message}` : '';
  if (cut && result.failed === 0) result.failed = 1;
  if (cut) result.failures.push(cut);
  // Each run's own closing summary is left out: the suite's is printed once, at the end.
  const body = out.split('\n').filter((l) => !/^ℹ (tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) /.test(l)).join('\n').trimEnd();
  const counts = [`${result.passed} passed`, ...(result.failed ? [`${result.failed} failed`] : []), ...(result.skipped ? [`${result.skipped} skipped`] : [])];
  write(`\n▶ ${result.file} (${(result.ms / 1000).toFixed(1)} s, ${counts.join(', ')})${result.failed ? ' FAILED' : ''}${cut ? ` (${cut})` : ''}\n${body}\n`);
  return result;
}

/**
 * Runs the files, at most `concurrency` at once (SILICO_TEST_CONCURRENCY, default 4:
 * test/bench/RESULTS.md says why),
 * each of ALONE with no other file running, and prints the slowest files and the counts.
 */
export async function runFiles(files: string[], opts: { env: NodeJS.ProcessEnv; namePattern?: string; concurrency?: number; stop?: AbortSignal; fileLimitMs?: number; /** Where the report goes (stdout). */ write?: (text: string) => void }): Promise<Schedule> {
  const stop = opts.stop ?? new AbortController().signal;
  const write = opts.write ?? ((text: string) => void process.stdout.write(text));
  // The test processes inherit this process's environment: the stack's addresses and key.
  Object.assign(process.env, opts.env);
  const concurrency = opts.concurrency ?? Number(process.env.SILICO_TEST_CONCURRENCY ?? 4);
  const rank = (f: string) => {
    if (rel(f) in ALONE) return -1;
    const i = LONGEST_FIRST.indexOf(rel(f));
    return i < 0 ? LONGEST_FIRST.length : i;
  };
  const queue = [...files].sort((a, b) => rank(a) - rank(b));
  const results: FileResult[] = [];
  const started = Date.now();
  const cpuAtStart = cpuTimes();
  const running = new Set<Promise<void>>();
  const fixtureOf = (f: string) => Object.entries(ONE_AT_A_TIME).find(([, files]) => files.includes(rel(f)))?.[0];
  const held = new Set<string>();
  let alone = false;
  const skipped: string[] = [];
  while (queue.length || running.size) {
    // Once stopped (the shared stack is gone), no file starts: each would only fail.
    if (stop.aborted) skipped.push(...queue.splice(0).map(rel));
    // The first file in order that may start now: none while one runs alone; one of
    // ALONE only when nothing runs; none whose fixture another file holds.
    const i = alone || running.size >= concurrency ? -1 : queue.findIndex((f) => {
      const fixture = fixtureOf(f);
      return (!(rel(f) in ALONE) || running.size === 0) && !(fixture && held.has(fixture));
    });
    if (i < 0) {
      if (!running.size) break;
      await Promise.race(running);
      continue;
    }
    const [next] = queue.splice(i, 1) as [string];
    const fixture = fixtureOf(next);
    alone = rel(next) in ALONE;
    if (fixture) held.add(fixture);
    const p: Promise<void> = runFile(next, opts.namePattern, stop, opts.fileLimitMs ?? FILE_LIMIT_MS, write).then((r) => {
      results.push(r);
      running.delete(p);
      if (rel(next) in ALONE) alone = false;
      if (fixture) held.delete(fixture);
    });
    running.add(p);
  }
  const schedule: Schedule = {
    files: results, ms: Date.now() - started,
    passed: results.reduce((n, r) => n + r.passed, 0), failed: results.reduce((n, r) => n + r.failed, 0), notRun: skipped, skipped: results.reduce((n, r) => n + r.skipped, 0),
  };
  // Per group (test/unit, test/integration, ...): files, counts, and the files' summed time.
  const groups = new Map<string, Omit<FileResult, 'failures'> & { files: number }>();
  for (const r of results) {
    const name = r.file.split('/').slice(0, 2).join('/');
    const g = groups.get(name) ?? { file: name, files: 0, ms: 0, passed: 0, failed: 0, skipped: 0 };
    groups.set(name, { ...g, files: g.files + 1, ms: g.ms + r.ms, passed: g.passed + r.passed, failed: g.failed + r.failed, skipped: g.skipped + r.skipped });
  }
  write(`\nby group (files' own times, summed):\n${[...groups.values()].map((g) => `  ${g.file.padEnd(18)} ${String(g.files).padStart(3)} files ${(g.ms / 1000).toFixed(0).padStart(5)} s  ${g.passed} passed, ${g.failed} failed${g.skipped ? `, ${g.skipped} skipped` : ''}`).join('\n')}\n`);
  const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 12);
  // Whether more files at once could shorten the run: the cores' share that was busy.
  const cpu = cpuTimes();
  const busy = (cpu.busy - cpuAtStart.busy) / Math.max(1, cpu.total - cpuAtStart.total);
  write(`\nslowest files (of ${results.length}, ${concurrency} at a time, ${(schedule.ms / 1000).toFixed(0)} s in all, the machine's ${cpus().length} cores ${(busy * 100).toFixed(0)}% busy):\n${slowest.map((r) => `  ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${r.file}`).join('\n')}\n`);
  // A long run's log is often read from its tail alone: each failure is said again here.
  for (const r of results.filter((x) => x.failed)) write(`failed: ${r.file} (${r.failed})\n${r.failures.map((f) => `  ✖ ${f}\n`).join('')}`);
  if (skipped.length) write(`not run (${(stop.reason as Error).message}): ${skipped.join(', ')}\n`);
  write(`\ntests: ${schedule.passed} passed, ${schedule.failed} failed${schedule.skipped ? `, ${schedule.skipped} skipped` : ''}${skipped.length ? `; ${skipped.length} files not run` : ''}\n`);
  return schedule;
}

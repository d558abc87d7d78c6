/**
 * `npm run bench:manifests`: the differential test of lab.yaml at scale (issue 43). The
 * generator of test/differential/ makes `--count` lab source trees from `--seed`; each is
 * judged by the runtime (its validator, the service's pack step, its prepare: judge.py in
 * `--judges` long-lived processes) and by the service's plan-time checks
 * (test/differential/service.ts, with as many of the service's own RuntimeJudge processes). Prints the count of every outcome
 * (test/differential/compare.ts), the causes of each kind of disagreement, the first
 * case of each failing cause shrunk by fast-check (from its seed and run index), and the
 * wall time. Exits 1 when any case fails.
 *
 *   npm run bench:manifests -- --count 100000 --seed 43 --judges 2 --shrink 8 [--start-all]
 *
 * SILICO_PYTHON names the runtime's interpreter; without it, the one `npm start` builds.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import fc from 'fast-check';
import { ensureRuntime } from '../../deploy/local/runtime.ts';
import { labCaseArb } from '../differential/generator.ts';
import { JudgePool } from '../differential/judges.ts';
import { ServiceChecks } from '../differential/service.ts';
import { describe, FAILURES, judgeCase, type Judged, type Outcome, type Sides } from '../differential/compare.ts';
import type { LabCase } from '../differential/types.ts';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '100000' },
    seed: { type: 'string', default: '43' },
    judges: { type: 'string', default: String(availableParallelism()) },
    // Failing causes shrunk and printed in full (each from its first case), at most this many.
    shrink: { type: 'string', default: '8' },
    'shrink-seconds': { type: 'string', default: '120' },
    // Start every lab either judge accepts, as npm test does; by default only those whose start decides a failure.
    'start-all': { type: 'boolean', default: false },
    // Stop drawing labs after this long and report those judged (a bounded run on a busy machine).
    minutes: { type: 'string' },
  },
});
const start = values['start-all'] ? 'always' : 'when_needed';
const count = Number(values.count);
const seed = Number(values.seed);
const judges = Math.max(1, Number(values.judges));
const say = (line: string) => process.stdout.write(`${line}\n`);

interface Cause { outcome: Outcome; cause: string; count: number; first: number; example: LabCase; judged: Judged }

const python = await ensureRuntime((l) => say(`[runtime] ${l}`));
const sides: Sides = { runtime: new JudgePool(python, judges), service: new ServiceChecks(python, judges) };
const tally = new Map<Outcome, number>();
const causes = new Map<string, Cause>();
const record = (i: number, c: LabCase, j: Judged) => {
  tally.set(j.outcome, (tally.get(j.outcome) ?? 0) + 1);
  if (!j.cause) return;
  const k = `${j.outcome}\u0000${j.cause}`;
  const known = causes.get(k);
  if (known) known.count += 1;
  else {
    causes.set(k, { outcome: j.outcome, cause: j.cause, count: 1, first: i, example: c, judged: j });
    // Said at once, so a run cut short still shows what it had found.
    if (FAILURES.has(j.outcome)) say(`  ! run ${i}: ${j.outcome}: ${j.cause}`);
  }
};

say(`bench:manifests: ${count} generated labs, seed ${seed}, ${judges} judge process(es) (${python})`);
const started = performance.now();
let done = 0;
let index = 0;
const inFlight = new Set<Promise<void>>();
// Enough in flight that no judge waits for the generator, few enough to bound memory.
const depth = judges * 4;
const failingSoFar = () => [...tally].filter(([o]) => FAILURES.has(o)).reduce((n, [, k]) => n + k, 0);
const progress = setInterval(() => say(`  ${done}/${count} judged, ${Math.round(done / ((performance.now() - started) / 1000))}/s, ${failingSoFar()} failing`), 15_000);
// fast-check draws the cases (so a case is replayed later by its run index); judging runs beside it.
const run = await fc.check(fc.asyncProperty(labCaseArb, async (c) => {
  const i = index++;
  while (inFlight.size >= depth) await Promise.race(inFlight);
  const p: Promise<void> = judgeCase(sides, c, start).then((j) => {
    record(i, c, j);
    done += 1;
  }).finally(() => inFlight.delete(p));
  inFlight.add(p);
  return true;
}), { seed, numRuns: count, ...(values.minutes ? { interruptAfterTimeLimit: Number(values.minutes) * 60_000, markInterruptAsFailure: false } : {}) });
await Promise.all(inFlight);
if (run.interrupted) say(`stopped drawing labs after --minutes ${values.minutes}: ${done} of ${count} judged`);
clearInterval(progress);
const seconds = (performance.now() - started) / 1000;
if (run.failed) throw run.errorInstance;

const cpu = process.cpuUsage();
say(`\njudged ${done} labs in ${seconds.toFixed(1)} s (${(seconds * 1000 / done).toFixed(2)} ms a lab; this process used ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s of CPU)\n`);
say('outcome                        count');
for (const [o, n] of [...tally].sort((a, b) => b[1] - a[1])) say(`${FAILURES.has(o) ? '!' : ' '} ${o.padEnd(28)} ${String(n).padStart(7)}`);

const byOutcome = [...causes.values()].sort((a, b) => (a.outcome < b.outcome ? -1 : a.outcome > b.outcome ? 1 : b.count - a.count));
for (const o of new Set(byOutcome.map((c) => c.outcome))) {
  say(`\n${o}${FAILURES.has(o) ? ' (FAILURE)' : ''}: causes`);
  for (const c of byOutcome.filter((x) => x.outcome === o)) say(`  ${String(c.count).padStart(7)}  ${c.cause}  (first: run ${c.first})`);
}

const failing = byOutcome.filter((c) => FAILURES.has(c.outcome));
for (const c of failing.slice(0, Number(values.shrink))) {
  // The same run replayed by its index and shrunk while it keeps failing the same way.
  const shrunk = await fc.check(fc.asyncProperty(labCaseArb, async (lab) => {
    const j = await judgeCase(sides, lab);
    return !(j.outcome === c.outcome && j.cause === c.cause);
  }), { seed, path: String(c.first), interruptAfterTimeLimit: Number(values['shrink-seconds']) * 1000 });
  const minimal = shrunk.counterexample?.[0] ?? c.example;
  say(`\n=== ${c.outcome}: ${c.cause} (${c.count} cases; shrunk from run ${c.first})\n${describe(minimal, await judgeCase(sides, minimal))}`);
}
await sides.runtime.close();
sides.service.close();
say(`\n${failing.reduce((n, c) => n + c.count, 0)} failing case(s) of ${done}; wall time ${seconds.toFixed(1)} s`);
process.exit(failing.length ? 1 : 0);

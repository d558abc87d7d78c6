/**
 * `npm run bench:sensitivity-time`: how soon a time-resolved sensitivity study's answer
 * follows its last run (issue 58), against SALib doing the same analysis alone.
 *
 * Study: a Sobol' study of the SBML lab test/fixtures/labs/sbml-decay-series (tellurium;
 * A(t) of first-order decay sampled every 0.1 s for 10 s: 100 times) varying its rate k
 * and initial amounts a0 and b0, base sample BENCH_RUNS / 5, so BENCH_RUNS runs, with
 * A's indices asked at every output time (`summary: series`). Measured: from its last run
 * settled to the study completed (its runs' series read and told, S1(t) and ST(t)
 * computed, the analysis and its files stored), from Postgres's own timestamps.
 * Baseline: SALib's Sobol' analyzer run by the analysis environment's Python on the same
 * values (the study's own, read back from Postgres), once per time, as a user looping
 * over time points would (the interpreter already started, SALib imported).
 * Goal: the answer within 10 s of the last run at 1,280 runs. BENCH_ROUNDS studies (a
 * warm-up of 40 runs first); prints each round and the median ratio (study / SALib
 * alone) last.
 *
 * Env: BENCH_RUNS (1280), BENCH_ROUNDS (3), BENCH_CONCURRENCY (4).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { createDb } from '../../storage/db/knex.ts';
import { benchOnStack } from './benchStack.ts';
import { labWorkspace } from './labWorkspace.ts';
import { median } from './stats.ts';
import { studyToEnd } from './studyToEnd.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 1280);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const C = Number(process.env.BENCH_CONCURRENCY ?? 4);
const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/sbml-decay-series');
const PARAMETERS = [{ input: 'k', low: 0.05, high: 0.5 }, { input: 'a0', low: 5, high: 15 }, { input: 'b0', low: 0, high: 10 }];

/** SALib's Sobol' analysis of each time's values, timed inside the interpreter after its imports. */
const DIRECT = `
import json, sys, time
import numpy as np
from SALib.analyze import sobol
d = json.load(sys.stdin)
problem = {"num_vars": 3, "names": ["k", "a0", "b0"], "bounds": d["bounds"]}
y = np.array(d["y"], dtype=float)
t0 = time.perf_counter()
for j in range(y.shape[1]):
    np.random.seed(d["seed"])
    sobol.analyze(problem, y[:, j], calc_second_order=False, num_resamples=100, conf_level=0.95, seed=d["seed"])
print(json.dumps({"seconds": time.perf_counter() - t0}))
`;

await benchOnStack('sensitivity-time', {
  SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', SILICO_CONCURRENT_RUNS: String(C), LOG_LEVEL: 'warn',
}, async ({ stack, http: h }) => {
  const db = createDb(stack.info.database_url, { poolMax: 2 });
  const ws = await labWorkspace(h, LAB, 'bench sensitivity over time');
  const lab = { workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: 120 };

  /** One study of `runs` runs until it completes: its wall time, and from its last run settled to its answer. */
  const study = async (runs: number, seed: number) => {
    const t0 = performance.now();
    const { id, done } = await studyToEnd(h, {
      name: 'bench sensitivity over time', lab,
      sensitivity: { parameters: PARAMETERS, outputs: [{ output: 'a', summary: 'series' }], method: 'sobol', base_sample: runs / 5, seed },
    }, 1000);
    const seconds = (performance.now() - t0) / 1000;
    const a = done.analysis;
    if (!a?.complete) throw new Error(`study ${id} found no indices: ${a?.note ?? JSON.stringify(done.run_totals)}`);
    const { last } = await db('experiment_runs as x').join('runs as r', 'r.id', 'x.run_id').where('x.experiment_id', id).first(db.raw('max(r.finished_at) AS last'));
    const { completed } = await db('experiments').where({ id }).first('completed_at as completed');
    const { told } = await db('experiment_points').where({ experiment_id: id }).first(db.raw('max(told_at) AS told'));
    const points: Array<{ outcome: Record<string, number[]> }> = await db('experiment_points').where({ experiment_id: id }).orderBy('idx').select('outcome');
    return {
      seconds, times: a.outputs[0].over_time.times.length as number,
      after: (completed.getTime() - last.getTime()) / 1000, told: (told.getTime() - last.getTime()) / 1000,
      y: points.map((p) => p.outcome['a.series']!),
    };
  };
  const direct = async (y: number[][], seed: number): Promise<number> => {
    const run = promisify(execFile)(stack.env.SILICO_ANALYSIS_PYTHON!, ['-c', DIRECT], { maxBuffer: 64 << 20 });
    run.child.stdin!.end(JSON.stringify({ y, seed, bounds: PARAMETERS.map((p) => [p.low, p.high]) }));
    return (JSON.parse((await run).stdout) as { seconds: number }).seconds;
  };

  await study(40, 1);
  console.log(`${RUNS}-run Sobol' study of an SBML lab (tellurium), A's indices at every output time, ${C} runs at a time: from its last run to its answer, against SALib alone on the same values`);
  const ratios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const s = await study(RUNS, round);
    const alone = await direct(s.y, round);
    ratios.push(s.after / alone);
    console.log(`round ${round}: study ${s.seconds.toFixed(1)} s, ${s.times} times; its answer ${s.after.toFixed(2)} s after its last run (told after ${s.told.toFixed(2)} s; goal <= 10 s); SALib alone ${alone.toFixed(2)} s; ratio ${(s.after / alone).toFixed(2)}`);
  }
  console.log(`answer after the last run against SALib alone (median of ${ROUNDS} rounds): ${median(ratios).toFixed(2)}`);
  await db.destroy();
});

/**
 * `npm run bench:petab`: a PEtab calibration through the service against pyPESTO run
 * in-process, as a scientist runs it alone.
 *
 * Service: Boehm_JProteomeRes2014 (the public collection's problem, test/fixtures/petab),
 * imported once; then per round one `petab_calibration` study of BENCH_STARTS fides starts
 * drawn from BENCH_SEED and profiles of BENCH_PROFILED parameters from the best end point,
 * `POST /experiment-plans` + `POST /experiments`, then `GET /experiments/{id}` every
 * 200 ms until `completed_at` is set (every start and profile run in its sandbox, every
 * evaluation stored, the Gauss-Newton view, the fit, the analysis and the export stored).
 * Baseline: test/differential/petab_pypesto.py in the same toolkit, one process: the
 * same simulator (libroadrunner through pyPESTO's importer, at the engine's tolerances),
 * optimiser (fides, BFGS, central differences of the engine's step), starts (numpy's
 * generator of the same seed) and iteration budget, then the same profiles with the same
 * options; timed from its spawn to its exit, imports included, as the service's engine
 * processes pay theirs.
 *
 * A warm-up of each, then BENCH_ROUNDS rounds alternating which side goes first; prints
 * per round both wall times, both best NLLs and where the study's time went, and the
 * median ratio (service / pyPESTO) last; goal <= 1.5.
 *
 * Env: BENCH_STARTS (16), BENCH_SEED (1), BENCH_PROFILED (none: the calibration alone, as
 * the goal is set; all: every estimated parameter; or a comma-separated list), BENCH_ROUNDS (3).
 * With no profile the service still takes the Gauss-Newton view and the fit at the best
 * point (one more run), which the baseline does not: that is ours to pay.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { ensurePetabEnv } from '../../deploy/local/runtime.ts';
import { createDb } from '../../storage/db/knex.ts';
import type { createHttpClient } from './httpClient.ts';
import { benchOnStack } from './benchStack.ts';
import { median } from './stats.ts';
import { studyTimeline } from './studyTimeline.ts';
import { studyToEnd } from './studyToEnd.ts';

const STARTS = Number(process.env.BENCH_STARTS ?? 16);
const SEED = Number(process.env.BENCH_SEED ?? 1);
const PROFILED = process.env.BENCH_PROFILED ?? 'none';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const NAME = 'Boehm_JProteomeRes2014';
const PROBLEM = path.join(REPO_ROOT, 'test/fixtures/petab/benchmark', NAME);
// pyPESTO's profile steps made coarser than its defaults, the same on both sides (a
// profile at the defaults costs about a minute of a core on Boehm).
const PROFILE_OPTIONS = { default_step_size_absolute: 0.1, min_step_size_absolute: 0.05, max_step_size_absolute: 0.5 };

type Http = ReturnType<typeof createHttpClient>;

/** The problem imported through the service from its files, the plan approved as it stands. */
async function importBoehm(h: Http): Promise<{ import_id: string; estimated: string[] }> {
  const files = readdirSync(PROBLEM).filter((f) => f !== 'SOURCE.md').sort().map((f) => ({ path: f, content: readFileSync(path.join(PROBLEM, f), 'utf8') }));
  for (;;) {
    try {
      const plan = await h.json('POST', '/petab-import-plans', { title: NAME, files });
      if (plan.status !== 'ready') throw new Error(`import plan blocked: ${JSON.stringify(plan.findings)}`);
      const imported = await h.json('POST', '/petab-imports', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
      return { import_id: imported.import_id, estimated: imported.design.estimated };
    } catch (err) {
      // The first inspection builds nothing but may outlast the prepare's wait: ask again.
      if (!String(err).includes('inspection_in_progress')) throw err;
    }
  }
}

/** pyPESTO in-process from spawn to exit: its best NLL and its wall time. */
function pypesto(python: string, profiled: string[]): Promise<{ seconds: number; best: number }> {
  const t0 = performance.now();
  const args = [path.join(REPO_ROOT, 'test/differential/petab_pypesto.py'), path.join(PROBLEM, `${NAME}.yaml`), String(SEED), String(STARTS)];
  if (profiled.length) args.push(JSON.stringify({ parameters: profiled, options: PROFILE_OPTIONS }));
  const child = spawn(python, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  child.stdout.setEncoding('utf8').on('data', (c: string) => lines.push(c));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`pyPESTO exited with ${code}`));
      const out = lines.join('').trim().split('\n').map((l) => JSON.parse(l) as { ends?: Array<{ fval: number }> });
      resolve({ seconds: (performance.now() - t0) / 1000, best: Math.min(...out[1]!.ends!.map((e) => e.fval)) });
    });
  });
}

await benchOnStack('petab', { SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', LOG_LEVEL: 'warn' }, async ({ stack, http: h }) => {
  const db = createDb(stack.info.database_url, { poolMax: 2 });
  const python = await ensurePetabEnv(() => {});
  const problem = await importBoehm(h);
  const profiled = PROFILED === 'all' ? problem.estimated : PROFILED === 'none' ? [] : PROFILED.split(',');

  /** One calibration through the service, from its plan until the client reads it completed. */
  const service = async () => {
    const t0 = performance.now();
    const { id, done } = await studyToEnd(h, {
      name: 'bench:petab', petab_calibration: { import_id: problem.import_id, starts: STARTS, seed: SEED, profile: { parameters: profiled, options: PROFILE_OPTIONS } },
    }, 200);
    const seconds = (performance.now() - t0) / 1000;
    if (done.run_totals.completed !== done.run_totals.total) throw new Error(`study ${id}: ${JSON.stringify(done.run_totals)}`);
    return { seconds, best: done.analysis.best.nll as number, runs: done.run_totals.total as number, detail: await studyTimeline(db, id) };
  };

  await service();
  await pypesto(python, profiled);
  console.log(`${NAME}: ${STARTS} fides starts (seed ${SEED}) and ${profiled.length} profiles, through the service against pyPESTO in-process, same simulator, optimiser, starts and budget`);
  const ratios: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const first = round % 2 ? 'service' : 'pyPESTO';
    let s: Awaited<ReturnType<typeof service>>;
    let p: Awaited<ReturnType<typeof pypesto>>;
    if (first === 'service') {
      s = await service();
      p = await pypesto(python, profiled);
    } else {
      p = await pypesto(python, profiled);
      s = await service();
    }
    ratios.push(s.seconds / p.seconds);
    console.log(`round ${round} (${first} first): service ${s.seconds.toFixed(2)} s (${s.runs} runs, best NLL ${s.best.toFixed(4)}), pyPESTO ${p.seconds.toFixed(2)} s (best NLL ${p.best.toFixed(4)}), ratio ${(s.seconds / p.seconds).toFixed(3)}`);
    console.log(`  service: ${s.detail}`);
  }
  console.log(`wall-time ratio (service / pyPESTO in-process, median of ${ROUNDS} rounds): ${median(ratios).toFixed(3)}  goal <= 1.5`);
  await db.destroy();
});

/**
 * `npm run bench:studies`: what a calibration costs against running its parameter sets
 * as lone runs.
 *
 * Study: one calibration of `platform/microbial-growth` (two parameters, 20 noisy
 * observations the lab generated) with a budget of N runs in batches of BENCH_BATCH
 * (CMA-ES), through `POST /experiment-plans` + `POST /experiments`, then
 * `GET /experiments/{id}` every BENCH_POLL_MS until `completed_at` is set (every batch
 * asked, run and told; the analysis and its files stored).
 * Lone: the same N parameter sets (the study's own, read back from it) as lone runs of
 * the same revision, each `POST /run-plans` + `POST /runs` + its event stream to the end,
 * the client keeping the account's limit in flight.
 *
 * Both execute the real lab in its sandbox on the stack's own worker: a calibration is
 * only as fast as its runs and the pauses between its batches (asking the optimizer,
 * telling it, the batch's slowest run). Same stack, same account and limit
 * (SILICO_CONCURRENT_RUNS = BENCH_CONCURRENCY). A warm-up of each, then BENCH_ROUNDS
 * rounds alternating which side goes first; prints per round the wall times, and the
 * median ratio (study / lone) last; goal <= 1.15.
 *
 * Env: BENCH_RUNS (200), BENCH_BATCH (20), BENCH_CONCURRENCY (4), BENCH_ROUNDS (3), BENCH_POLL_MS (200).
 */
import path from 'node:path';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import type { createHttpClient } from './httpClient.ts';
import { benchOnStack } from './benchStack.ts';
import { labWorkspace } from './labWorkspace.ts';
import { createDb } from '../../storage/db/knex.ts';
import { median } from './stats.ts';
import { studyTimeline } from './studyTimeline.ts';

const N = Number(process.env.BENCH_RUNS ?? 200);
const BATCH = Number(process.env.BENCH_BATCH ?? 20);
const C = Number(process.env.BENCH_CONCURRENCY ?? 4);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 200);
const LAB = path.join(REPO_ROOT, 'labs/microbial-growth');
const TRUTH = { growth_rate: 0.4, initial_substrate: 8 };

type Http = ReturnType<typeof createHttpClient>;

const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

/** One lone run of the lab with these inputs, as the SDK waits for it: plan, create, event stream to its end, read. */
async function lone(h: Http, lab: Record<string, unknown>, inputs: Record<string, number>): Promise<void> {
  const plan = await h.json('POST', '/run-plans', { ...lab, inputs });
  const run = await h.json('POST', '/runs', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
  await h.text(`/runs/${run.id}/events`, { Accept: 'text/event-stream' });
  const r = await h.json('GET', `/runs/${run.id}`);
  if (r.status !== 'completed') throw new Error(`run ${run.id} ${r.status}: ${JSON.stringify(r.error)}`);
}

/**
 * The observations: the lab's own biomass at the true parameters at t = 1..20, with
 * deterministic ±5% perturbations, uploaded and registered as a dataset version.
 */
async function observations(h: Http, base: string, key: string, lab: Record<string, unknown>): Promise<string> {
  const plan = await h.json('POST', '/run-plans', { ...lab, inputs: TRUTH });
  const run = await h.json('POST', '/runs', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
  await h.text(`/runs/${run.id}/events`, { Accept: 'text/event-stream' });
  const results = await h.json('GET', `/runs/${run.id}/results`);
  const csv = results.artifacts.find((a: { file_name: string }) => a.file_name === 'biomass.csv');
  const text = await (await fetch(csv.download_url, { headers: { Authorization: `Bearer ${key}` } })).text();
  const series = new Map(text.trim().split('\n').slice(1).map((l) => l.split(',').map(Number) as [number, number]));
  const rows = Array.from({ length: 20 }, (_, i) => i + 1).map((t, i) => `${t},${series.get(t)! * (1 + 0.05 * Math.sin(7 * i))}`);
  const form = new FormData();
  form.append('file', new Blob([`t,biomass\n${rows.join('\n')}\n`]), 'observations.csv');
  const file = await (await fetch(`${base}/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form })).json() as { file_id: string; sha256: string; size_bytes: number };
  const ds = await h.json('POST', '/datasets', {
    name: 'bench-observations', source: 'bench', license: 'CC0-1.0', attribution: 'bench:studies', annotation_version: 'v1',
    members: [{ file_id: file.file_id, sha256: file.sha256, size_bytes: file.size_bytes, sample_id: 's1', group_id: 'g1', role: 'table', split: 'train' }],
  });
  for (;;) {
    if ((await h.json('GET', `/datasets/${ds.dataset_id}`)).status === 'registered') return ds.dataset_id as string;
    await sleep(200);
  }
}

await benchOnStack('calibration', {
  SILICO_RATE_READS_PER_MIN: '100000000', SILICO_RATE_RUNS_PER_MIN: '100000000', SILICO_RATE_DAILY: '100000000', SILICO_CONCURRENT_RUNS: String(C), LOG_LEVEL: 'warn',
}, async ({ stack, http: h, base }) => {
  const db = createDb(stack.info.database_url, { poolMax: 2 });
  const ws = await labWorkspace(h, LAB, 'bench calibration');
  const lab = { workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: 60 };
  const datasetId = await observations(h, base, stack.info.api_key, lab);

  /** One calibration of `n` runs, from its plan until the client reads it completed; returns its wall time and its parameter sets. */
  const study = async (n: number) => {
    const t0 = performance.now();
    const plan = await h.json('POST', '/experiment-plans', {
      name: 'bench calibration', lab,
      calibration: {
        parameters: [{ input: 'growth_rate', low: 0.2, high: 0.6 }, { input: 'initial_substrate', low: 4, high: 12 }],
        dataset_id: datasetId, observations: [{ output: 'biomass' }], loss: 'sum_of_squares', optimizer: 'cmaes', budget: n, batch_size: Math.min(BATCH, n), seed: 1,
      },
    });
    if (plan.status !== 'ready') throw new Error(`study plan blocked: ${JSON.stringify(plan.findings)}`);
    const e = await h.json('POST', '/experiments', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
    let done;
    const reads: number[] = [];
    for (;;) {
      const r0 = performance.now();
      done = await h.json('GET', `/experiments/${e.id}`);
      reads.push(performance.now() - r0);
      if (done.completed_at) break;
      await sleep(POLL_MS);
    }
    const seconds = (performance.now() - t0) / 1000;
    if (done.run_totals.completed !== n) throw new Error(`study ${e.id}: ${JSON.stringify(done.run_totals)}`);
    const sets: Array<Record<string, number>> = [];
    for (let cursor: string | null = null, first = true; first || cursor; first = false) {
      const page: { items: Array<{ run_id: string }>; next_cursor: string | null } = await h.json('GET', `/experiments/${e.id}/runs?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      for (const r of page.items) sets.push((await h.json('GET', `/runs/${r.run_id}`)).inputs);
      cursor = page.next_cursor;
    }
    return { seconds, sets, batches: Math.ceil(n / Math.min(BATCH, n)), detail: `${await studyTimeline(db, e.id)}; ${reads.length} reads of the study (median ${median(reads).toFixed(1)} ms, max ${Math.max(...reads).toFixed(0)} ms)` };
  };
  /** The same parameter sets as lone runs, the client keeping `C` in flight. */
  const lones = async (sets: Array<Record<string, number>>) => {
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: C }, async () => {
      while (next < sets.length) await lone(h, lab, sets[next++]!);
    }));
    return { seconds: (performance.now() - t0) / 1000 };
  };

  const warm = await study(Math.min(2 * BATCH, N));
  await lones(warm.sets);
  console.log(`${N}-run calibration (batches of ${BATCH}, CMA-ES) against the same ${N} parameter sets as lone runs, ${C} in flight (the account's limit), real lab executions`);
  const ratios: number[] = [];
  // A lone side that goes first runs the sets of round 1's study: the same seed on the
  // same data asks the same sets.
  let sets: Array<Record<string, number>> = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const first = round % 2 ? 'study' : 'lone';
    let s: Awaited<ReturnType<typeof study>>;
    let l: Awaited<ReturnType<typeof lones>>;
    if (first === 'study') {
      s = await study(N);
      sets = s.sets;
      l = await lones(sets);
    } else {
      l = await lones(sets);
      s = await study(N);
    }
    ratios.push(s.seconds / l.seconds);
    console.log(`round ${round} (${first} first): study ${s.seconds.toFixed(2)} s (${s.batches} batches), lone ${l.seconds.toFixed(2)} s, ratio ${(s.seconds / l.seconds).toFixed(3)}`);
    console.log(`  study: ${s.detail}`);
  }
  console.log(`wall-time ratio (study / lone, median of ${ROUNDS} rounds): ${median(ratios).toFixed(3)}  goal <= 1.15`);
  await db.destroy();
});

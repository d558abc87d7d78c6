import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { call, closeTestDb, downloadArtifact, leftOfRuns, newAccount, sandboxUserProcesses, spawnWorker, testDb, testSandbox, until, useTestProfiles } from '../helpers.ts';
import { BENCHMARK, importProblem, petabSkip } from '../petabProblems.ts';
import { runEngine, type EngineRequest } from '../../activities/petab/engine.ts';

// A PEtab calibration (activities/execution/petabTask.ts) whose worker is killed (kill -9)
// while a run is midway through its second start, its first ended: the run, executed again
// by another worker, skips the start that ended and resumes the other from its last
// recorded best, so the start's evaluations before the kill still count, every start ends
// once, and nothing of the killed worker's sandboxes is left. On a worker and compute
// profile of this file's own, so killing it touches no other file's runs.

const PROFILE = { id: 'test-petab-chaos', title: 'Test profile of a PEtab calibration under chaos', memory_mib: 2048, max_runtime_seconds: 600, schedule_to_start_seconds: 600 };
useTestProfiles(PROFILE);
after(closeTestDb);
const skip = petabSkip;
const BOEHM = 'Boehm_JProteomeRes2014';

let owner: Awaited<ReturnType<typeof newAccount>>;
let imported: Record<string, any>;
let worker: Awaited<ReturnType<typeof spawnWorker>> | undefined;
before(async () => {
  if (skip) return;
  owner = await newAccount({ usd: 100 });
  imported = await importProblem(owner.key, BOEHM);
  worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
});
after(async () => {
  await worker?.stop();
});

interface StartEnd { index: number; fval: number | null; x: number[] | null; n_fval: number; ended: string; evaluations_sha256: string | null }
interface Best { run_id: string; seq: number; n_fval: number; fval: number; x: number[] }
/** What a start's runs recorded of it: its best-so-far records and its ends, in order. */
interface Told { bests: Best[]; ends: Array<{ run_id: string; seq: number; end: StartEnd }> }

/** The runs of the study's starts (batch 0), once the study has made them. */
async function startRuns(studyId: string): Promise<string[]> {
  return testDb()('experiment_points').where({ experiment_id: studyId, batch: 0 }).orderBy('idx').pluck('run_id');
}

/** Every start's records in the runs' `petab` progress events, as Postgres holds them now. */
async function told(runIds: string[]): Promise<Map<number, Told>> {
  const rows: Array<{ run_id: string; seq: number; data: Record<string, any> }> = await testDb()('run_events')
    .whereIn('run_id', runIds).where({ type: 'progress' }).whereRaw(`data->>'phase' = 'petab'`).orderBy(['run_id', 'seq']).select('run_id', 'seq', 'data');
  const starts = new Map<number, Told>();
  const of = (i: number) => starts.get(i) ?? starts.set(i, { bests: [], ends: [] }).get(i)!;
  for (const { run_id, seq, data } of rows) {
    if (data.start_end) of(data.start_end.index).ends.push({ run_id, seq, end: data.start_end });
    else if (typeof data.start === 'number') of(data.start).bests.push({ run_id, seq, n_fval: data.n_fval, fval: data.fval, x: data.x });
  }
  return starts;
}

/** The starts recorded midway (a best with evaluations behind it, no end), by their last best. */
const midway = (starts: Map<number, Told>) => new Map([...starts].filter(([, s]) => !s.ends.length && s.bests.at(-1)?.n_fval).map(([i, s]) => [i, s.bests.at(-1)!]));

test('a PEtab calibration whose worker is killed (kill -9) mid-start completes: the run executed again skips its ended start and resumes the other from its last recorded best, counting the evaluations before the kill; every start ends once and is in the waterfall; every run completed; nothing of the killed worker is left', { skip, timeout: 600_000 }, async () => {
  // Seed 1's nine starts, three to a run, by L-BFGS-B: each takes 3 to 15 s of a core on Boehm.
  const plan = await call('POST', '/experiment-plans', {
    key: owner.key,
    body: { name: 'Boehm under chaos', petab_calibration: { import_id: imported.import_id, starts: 9, seed: 1, optimizer: 'lbfgsb', profile: { parameters: [] }, compute_profile_id: PROFILE.id, max_runtime_seconds: 300 } },
  });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  assert.equal(plan.body.design.starts_per_run, 3);
  const ids: string[] = plan.body.design.parameters.map((p: any) => p.id);
  const opened = await call('POST', '/experiments', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(opened.status, 200, opened.text);
  const studyId = opened.body.id as string;

  // A run that has ended one start and recorded a best of the next, not ended.
  const runIds = await until(120_000, async () => {
    const r = await startRuns(studyId);
    return r.length === 3 ? r : undefined;
  });
  await until(300_000, async () => {
    const starts = await told(runIds);
    const ended = [...starts.values()].flatMap((s) => s.ends.map((e) => e.run_id));
    return [...midway(starts).values()].some((b) => ended.includes(b.run_id)) ? true : undefined;
  });
  assert.ok(sandboxUserProcesses(worker!.uids).length > 0, 'the engine runs in a sandbox of the worker');
  const killed = worker!;
  killed.proc.kill('SIGKILL');
  await new Promise((r) => killed.proc.once('exit', r));
  // No engine process of the killed worker survives it.
  await until(10_000, async () => (leftOfRuns(killed.uids).length === 0 ? true : undefined)).catch(() => undefined);
  assert.deepEqual(leftOfRuns(killed.uids), [], 'no process of the killed worker\'s sandboxes remains');
  // What the runs recorded before the kill: nothing more can be, the worker and its engines
  // are gone, and none is executed again before Temporal misses its heartbeat (20 s).
  const atKill = await told(runIds);
  const resumed = midway(atKill);
  const endedBefore = new Map([...atKill].filter(([, s]) => s.ends.length).map(([i, s]) => [i, s.ends[0]!]));
  assert.ok([...resumed.values()].some((b) => [...endedBefore.values()].some((e) => e.run_id === b.run_id)), 'a run was killed midway through a start after ending another');
  worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });

  const done = await until(400_000, async () => {
    const e = (await call('GET', `/experiments/${studyId}?include_runs=true`, { key: owner.key })).body;
    return e.completed_at ? e : undefined;
  });
  const a = done.analysis;
  assert.equal(a.kind, 'petab_calibration');
  assert.equal(a.stopped, 'completed');
  assert.equal(a.starts_told, 9);
  assert.deepEqual(a.waterfall.map((w: any) => w.start).sort((x: number, y: number) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8], 'the waterfall lists every start');
  assert.ok(a.best.nll <= Math.min(...[...resumed.values()].map((b) => b.fval)), 'the best is no worse than what was recorded before the kill');

  // Every run ended completed, the killed ones too, and the study counts them so.
  const runs = done.arms[0].runs as Array<{ run_id: string }>;
  assert.equal(runs.length, plan.body.run_count);
  for (const { run_id } of runs) {
    const r = (await call('GET', `/runs/${run_id}`, { key: owner.key })).body;
    assert.equal(r.status, 'completed', `run ${run_id}: ${JSON.stringify(r.error)}`);
    assert.equal(r.error, null);
    assert.ok(r.finished_at && r.credits_settled > 0, `run ${run_id} ended and was charged`);
  }
  assert.deepEqual(done.run_totals, { ...done.run_totals, completed: plan.body.run_count }, JSON.stringify(done.run_totals));

  const final = await told(runIds);
  for (let i = 0; i < 9; i++) assert.equal(final.get(i)?.ends.length, 1, `start ${i} ended exactly once`);
  // A start that ended before the kill was skipped by the run's second execution: nothing more of it recorded.
  for (const [i, e] of endedBefore) {
    assert.equal(final.get(i)!.ends[0]!.seq, e.seq, `start ${i}'s end is the one before the kill`);
    assert.ok(final.get(i)!.bests.every((b) => b.seq < e.seq), `start ${i} did not run again`);
  }

  const artifactsOf = new Map<string, any[]>();
  const artifacts = async (runId: string) => artifactsOf.get(runId) ?? artifactsOf.set(runId, (await call('GET', `/runs/${runId}/results`, { key: owner.key })).body.artifacts).get(runId)!;
  for (const w of a.waterfall) {
    const end = final.get(w.start)!.ends[0]!;
    assert.equal(w.run_id, end.run_id);
    assert.equal(w.evaluations, end.end.n_fval);
    assert.equal(w.evaluations_sha256, end.end.evaluations_sha256);
    const files = (await artifacts(w.run_id)).filter((f) => f.file_name.startsWith(`evaluations-start-${w.start}.`) || f.file_name.startsWith(`evaluations-start-${w.start}-`));
    assert.equal(files.length, 1, `start ${w.start}: one evaluations file, ${files.map((f) => f.file_name).join(', ')}`);
    const [file] = files;
    assert.equal(file.sha256, w.evaluations_sha256);
    const rows = parseCsv(await downloadArtifact(owner.key, w.run_id, file.artifact_id), { columns: true }) as Array<Record<string, string>>;
    assert.equal(Math.min(...rows.map((r) => Number(r.nll))), w.nll, `start ${w.start}: its end is its best evaluation`);
    const kill = resumed.get(w.start);
    if (!kill) {
      // Ran whole in one execution: every evaluation, numbered from one.
      assert.equal(file.file_name, `evaluations-start-${w.start}.csv`);
      assert.deepEqual(rows.map((r) => Number(r.evaluation)), rows.map((_, k) => k + 1));
      continue;
    }
    // Resumed: its end counts the evaluations recorded before the kill and those after;
    // the second execution's first evaluation is at the recorded best, numbered after it.
    assert.equal(kill.run_id, w.run_id);
    assert.ok(w.evaluations > kill.n_fval, `start ${w.start}: ${w.evaluations} evaluations in all, ${kill.n_fval} recorded at the kill`);
    assert.equal(file.file_name, `evaluations-start-${w.start}-from-${kill.n_fval}.csv`);
    assert.equal(rows.length, w.evaluations - kill.n_fval);
    assert.deepEqual(rows.map((r) => Number(r.evaluation)), rows.map((_, k) => kill.n_fval + k + 1));
    assert.deepEqual(ids.map((id) => Number(rows[0]![id])), kill.x, `start ${w.start} resumed at its recorded best`);
    assert.ok(Math.abs(Number(rows[0]!.nll) - kill.fval) <= 1e-9 * Math.abs(kill.fval), `start ${w.start}: NLL ${rows[0]!.nll} where ${kill.fval} was recorded`);
    assert.ok(w.nll <= kill.fval);
    const later = final.get(w.start)!.bests.filter((b) => b.seq > kill.seq);
    assert.ok(later.every((b) => b.n_fval > kill.n_fval), `start ${w.start}'s records after the kill count on from ${kill.n_fval}`);
  }

  // Nothing of the new worker's sandboxes is left either.
  await until(10_000, async () => (leftOfRuns(worker!.uids).length === 0 ? true : undefined)).catch(() => undefined);
  assert.deepEqual(leftOfRuns(worker!.uids), []);
  assert.deepEqual(leftOfRuns(killed.uids), []);
});

/** The sandboxed engine's messages for one request on Boehm, as a run's engine gets it. */
async function engineOn(request: EngineRequest): Promise<Array<Record<string, any>>> {
  const messages: Array<Record<string, any>> = [];
  const scratch = await mkdtemp(path.join(tmpdir(), 'silico-petab-chaos-'));
  try {
    const outcome = await runEngine(testSandbox(), {
      python: process.env.SILICO_PETAB_PYTHON!, problemDir: path.join(BENCHMARK, BOEHM), yaml: `${BOEHM}.yaml`, scratch, request,
      limits: { memoryBytes: 4 * 2 ** 30, cpuSeconds: 300, processes: 64, openFiles: 256, fileSizeBytes: 1 << 30, tmpBytes: 256 << 20, scratchBytes: 256 << 20 },
      vcpus: 1, wallSeconds: 300, onMessage: (m) => { messages.push(m); },
    });
    assert.equal(outcome.error, null, JSON.stringify(outcome.error));
    return messages;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

// The kill can land after a start's last best is recorded and before its end is: a start
// that ended by its budget is then resumed with nothing left of it.
test('a start resumed with nothing left of its evaluation budget ends on its recorded best (its NLL, point and evaluations), not with no point', { skip, timeout: 120_000 }, async () => {
  const plan = await call('POST', '/experiment-plans', { key: owner.key, body: { name: 'Boehm', petab_calibration: { import_id: imported.import_id, starts: 1, seed: 1 } } });
  assert.equal(plan.status, 200, plan.text);
  const x0: number[] = plan.body.design.parameters.map((p: any) => p.nominal);
  const budget = 40;
  const first = (await engineOn({ command: 'optimize', optimizer: 'lbfgsb', max_evaluations: budget, starts: [{ index: 0, x0 }] })).find((m) => m.type === 'start_end')!;
  assert.deepEqual([first.ended, first.n_fval], ['budget', budget]);
  // As petabTask.ts resumes it from its last `progress` record: the point, its NLL and the evaluations spent.
  const recorded = { index: 0, x0, x: first.x as number[], n_fval: budget, fval: first.fval as number };
  const messages = await engineOn({ command: 'optimize', optimizer: 'lbfgsb', max_evaluations: budget, starts: [recorded] });
  assert.ok(!messages.some((m) => m.type === 'evaluations'), 'nothing evaluated past the budget');
  const end = messages.find((m) => m.type === 'start_end')!;
  assert.deepEqual({ fval: end.fval, x: end.x, n_fval: end.n_fval, ended: end.ended }, { fval: first.fval, x: first.x, n_fval: budget, ended: 'budget' });
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { call, closeTestDb, driverPid, leftOfRuns, newAccount, parentPid, processAlive, runDirsOf, spawnWorker, testDb, until, useTestProfiles, waitForRun, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// A study's batch under chaos (activities/execution/batch.ts): the forked run it is at
// killed, then the warm parent it forks from, then its whole worker. Each run whose
// process was killed ends within 5 s saying why, the batch goes on with the next run, no
// run starts twice, and nothing of a sandbox is left; with its worker gone, closing the
// study with cancel_running ends every run within 5 s. On a worker and profile of this
// file's own, so killing processes touches no other file's runs.

const PROFILE = 'test-study-chaos';
const ENDS_WITHIN_MS = 5000;
/**
 * Temporal's workflow task timeout (its default, which the service keeps). A worker killed
 * outright can leave a long poll the server still hands the study's next task to (a
 * zombie poller): that task comes back to a live worker only once it times out, so with
 * the worker killed, the runs end within the 5 s or within this much more.
 */
const WORKFLOW_TASK_TIMEOUT_MS = 10_000;
useTestProfiles({ id: PROFILE, title: 'Test profile of a study under chaos', schedule_to_start_seconds: 600, memory_mib: 2048, price_per_second_micros: 10 });

let owner: Awaited<ReturnType<typeof newAccount>>;
let ws: Awaited<ReturnType<typeof workspaceOfLab>>;
let worker: Awaited<ReturnType<typeof spawnWorker>> | undefined;
before(async () => {
  worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE });
  owner = await newAccount({ usd: 50 });
  ws = await workspaceOfLab(owner.key, 'Slow lab', path.join(REPO_ROOT, 'test/fixtures/labs/slow-lab'));
});
after(async () => {
  await worker?.stop();
  await closeTestDb();
});

/** A Sobol' study of the slow lab: 8 runs, each asleep for 2 to 3 s in 50 to 100 ms windows. */
async function openStudy(): Promise<string> {
  const plan = await call('POST', '/experiment-plans', { key: owner.key, body: {
    name: 'Study under chaos', lab: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: PROFILE, max_runtime_seconds: 120, inputs: {} },
    sensitivity: {
      parameters: [{ input: 'seconds_per_window', low: 0.05, high: 0.1 }, { input: 'busy_seconds', low: 2, high: 3 }],
      outputs: [{ output: 'elapsed', summary: 'final' }], method: 'sobol', base_sample: 2, seed: 7,
    },
  } });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  const res = await call('POST', '/experiments', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(res.status, 200, res.text);
  return res.body.id;
}

const runsOf = async (studyId: string): Promise<Array<{ run_id: string; status: string }>> => (await call('GET', `/experiments/${studyId}?include_runs=true`, { key: owner.key })).body.arms[0].runs;

/** A run of the study executing now (none of `seen`), once its lab's interpreter runs: its id and the lab's pid. */
async function executing(studyId: string, seen: string[]): Promise<{ id: string; lab: number }> {
  const id = await until(60_000, async () => (await runsOf(studyId)).find((r) => r.status === 'running' && !seen.includes(r.run_id))?.run_id);
  const lab = await driverPid(owner.key, id, 60_000);
  await until(30_000, async () => (processAlive(lab) ? true : undefined));
  return { id, lab };
}

/** The run's ending, within 5 s of `since` (or `within`), with what it says. */
async function endedWithin(id: string, since: number, within = ENDS_WITHIN_MS) {
  const run = await waitForRun(owner.key, id, 30_000);
  const took = new Date(run.finished_at).getTime() - since;
  assert.ok(took <= within, `run ${id} ended ${took} ms after its cause (${run.status} ${run.error?.code})`);
  return run;
}

/** Each run of the study began executing once at most: one `running` state each. */
async function startedOnce(studyId: string): Promise<void> {
  for (const r of await runsOf(studyId)) {
    const running = await testDb()('run_events').where({ run_id: r.run_id, type: 'state_changed' }).whereRaw(`data->>'status' = 'running'`).count('* as n').first();
    assert.ok(Number(running!.n) <= 1, `run ${r.run_id} started once`);
  }
}

/** No process of a sandbox uid is left but idle warm parents, nor (`dirs`) any run's directory. */
const nothingLeft = async (runIds: string[], dirs = true) => {
  await until(10_000, async () => (leftOfRuns(worker!.uids).length === 0 && (!dirs || runIds.every((id) => runDirsOf(id).length === 0)) ? true : undefined)).catch(() => undefined);
  assert.deepEqual(leftOfRuns(worker!.uids), [], 'no process of a sandbox uid remains but idle warm parents');
  if (dirs) for (const id of runIds) assert.deepEqual(runDirsOf(id), [], `run ${id}'s directories are gone`);
};

test('mid-batch, the forked run killed and then its warm parent killed: each ends lab_killed_by_signal within 5 s, the batch goes on, every other run completes once, nothing left', { timeout: 300_000 }, async () => {
  const studyId = await openStudy();
  const first = await executing(studyId, []);
  let since = Date.now();
  process.kill(first.lab, 'SIGKILL');
  const killed = await endedWithin(first.id, since);
  assert.equal(killed.status, 'failed');
  assert.equal(killed.error.code, 'lab_killed_by_signal');

  const second = await executing(studyId, [first.id]);
  const parent = parentPid(second.lab)!;
  assert.ok(parent > 1, 'the run was forked from a warm parent');
  since = Date.now();
  process.kill(parent, 'SIGKILL');
  const orphaned = await endedWithin(second.id, since);
  assert.equal(orphaned.status, 'failed');
  assert.equal(orphaned.error.code, 'lab_killed_by_signal');

  const done = await until(240_000, async () => {
    const e = (await call('GET', `/experiments/${studyId}`, { key: owner.key })).body;
    return e.completed_at ? e : undefined;
  });
  assert.deepEqual(done.run_totals, { ...done.run_totals, completed: 6, failed: 2 }, JSON.stringify(done.run_totals));
  assert.equal(done.analysis.complete, false, 'no indices from a partial sample');
  await startedOnce(studyId);
  await nothingLeft((await runsOf(studyId)).map((r) => r.run_id));
});

test('mid-batch, its worker killed (no other serving it): closing the study with cancel_running ends every run within 5 s (15 s when the dead worker\'s poll took the study\'s task), cancelled, those executing charged for their time, the rest nothing', { timeout: 300_000 }, async () => {
  const studyId = await openStudy();
  const { id, lab } = await executing(studyId, []);
  worker!.proc.kill('SIGKILL');
  await until(10_000, async () => (processAlive(lab) ? undefined : true));
  const since = Date.now();
  const closed = await call('PATCH', `/experiments/${studyId}`, { key: owner.key, body: { status: 'closed', cancel_running: true } });
  assert.equal(closed.status, 200, closed.text);
  const runs = await runsOf(studyId);
  for (const r of runs) {
    const run = await endedWithin(r.run_id, since, ENDS_WITHIN_MS + WORKFLOW_TASK_TIMEOUT_MS);
    assert.equal(run.status, 'cancelled', `run ${r.run_id}: ${JSON.stringify(run.error)}`);
    // The batches on the worker's two slots may each have been executing one.
    if (r.run_id === id) assert.ok(run.started_at, 'the run that was executing had begun');
    if (run.started_at) assert.ok(run.credits_settled > 0, `run ${r.run_id}, executing, is charged for the time it ran`);
    else assert.equal(run.credits_settled, 0, `run ${r.run_id} never began and is charged nothing`);
  }
  await startedOnce(studyId);
  // A worker killed outright cannot remove its runs' directories; its processes are gone with it.
  await nothingLeft(runs.map((r) => r.run_id), false);
  worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE });
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { call, childrenOf, parentPid, closeTestDb, driverPid, leftOfRuns, newAccount, processAlive, publishFixtureLab, runDirsOf, spawnWorker, testDb, testObjects, until, useTestProfiles, waitForRun } from '../helpers.ts';
import { createMaintenanceActivities } from '../../activities/maintenance.ts';
import { executionProbeOf, workflowStateOf } from '../../activities/workflowState.ts';
import { runWorkflowId } from '../../kernel/workflowNames.ts';

// No run outlives its lab: whatever ends a lab's process, its run ends within 5 s with the
// error that says why, nothing of its sandbox is left, and the next run completes. The
// lab is killed from outside at random points, stopped, and made to break its protocol,
// on a worker of this file's own (its profile, its sandbox uids, a short stall deadline),
// so killing processes never touches another file's runs. Its runs fork from warm parents
// (warmParents.ts), so the parent is killed too, and its sandbox's init, mid-run; what is
// left after a run is at most an idle parent.

const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
const PROFILE = 'test-chaos';
const STALL_SECONDS = 3;
const ENDS_WITHIN_MS = 5000;
/** Served by a worker the sweeper's test kills, and by no other. */
const LOST_PROFILE = 'test-chaos-lost';
useTestProfiles(
  { id: PROFILE, title: 'Test profile of the chaos tests', schedule_to_start_seconds: 120, memory_mib: 2048 },
  { id: LOST_PROFILE, title: 'Test profile whose worker is lost', schedule_to_start_seconds: 600, memory_mib: 2048 },
);

let owner: Awaited<ReturnType<typeof newAccount>>;
let hostile = '';
let worker: Awaited<ReturnType<typeof spawnWorker>>;
before(async () => {
  worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE, SILICO_LAB_STALL_SECONDS: String(STALL_SECONDS) });
  owner = await newAccount({ usd: 50 });
  hostile = await publishFixtureLab(owner, 'hostile-lab');
});
after(async () => {
  await worker?.stop();
  await closeTestDb();
});

/**
 * The processes of a run, from the pid its events give: a run forked from a warm parent
 * is that process itself (the lab), below its parent, below its sandbox's init; a cold
 * run's pid is its outer bubblewrap, with the init below it, then the lab.
 */
function sandboxTree(pid: number): { init: number | null; parent: number | null; lab: number | null } {
  try {
    if (readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('python')) {
      const parent = parentPid(pid);
      return { init: parent === null ? null : parentPid(parent), parent, lab: pid };
    }
    const [init] = childrenOf(pid);
    if (!init) return { init: null, parent: null, lab: null };
    let lab: number | null = null;
    const walk = (p: number) => {
      for (const c of childrenOf(p)) {
        if (lab === null && readFileSync(`/proc/${c}/comm`, 'utf8').startsWith('python') && statSync(`/proc/${c}`).uid >= worker.uids.base) lab = c;
        walk(c);
      }
    };
    walk(init);
    return { init, parent: null, lab };
  } catch {
    return { init: null, parent: null, lab: null };
  }
}

/** Submits an attack run; resolves with its id. */
async function submit(attack: number, profile = PROFILE): Promise<string> {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: hostile, inputs: { attack, target: { ports: [], hosts: [], paths: [] } }, max_runtime_seconds: 120, compute_profile: profile } });
  assert.equal(res.status, 200, res.text);
  return res.body.id;
}

/** Starts an attack run and resolves once its lab's interpreter is running, with its processes. */
async function startRun(attack: number) {
  const id = await submit(attack);
  const group = await driverPid(owner.key, id, 60000);
  const deadline = Date.now() + 30000;
  for (;;) {
    const tree = sandboxTree(group);
    if (tree.lab && tree.init) return { id, group, init: tree.init, parent: tree.parent, lab: tree.lab };
    assert.ok(Date.now() < deadline, 'the lab started');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The run's ending, which must come within 5 s of `since` (or of the attack's start, as its
 * log event tells), and nothing of its sandbox left.
 */
async function endsPromptly(id: string, since: number | 'attack') {
  const run = await waitForRun(owner.key, id, 30000);
  const events = (await call('GET', `/runs/${id}/events?limit=1000`, { key: owner.key })).body.items as Array<{ at: string; type: string; message: string }>;
  if (since === 'attack') since = new Date(events.find((e) => e.message.startsWith('attacking'))!.at).getTime();
  const took = new Date(run.finished_at).getTime() - since;
  // When it is late, where the time went: each event's offset from the cause.
  const timeline = () => events.map((e) => `${new Date(e.at).getTime() - (since as number)} ms ${e.type}: ${e.message.slice(0, 80)}`).join('\n  ');
  assert.ok(took <= ENDS_WITHIN_MS, `the run ended ${took} ms after its cause (${run.status} ${run.error?.code}); its events:\n  ${timeline()}`);
  const deadline = Date.now() + 5000;
  while ((leftOfRuns(worker.uids).length || runDirsOf(id).length) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(leftOfRuns(worker.uids), [], 'no process of a sandbox uid remains but idle warm parents');
  assert.deepEqual(runDirsOf(id), [], 'its directories are gone');
  return run;
}

test('killed from outside at random points, 20 times (its interpreter, the warm parent it forks from, the sandbox init, the driver mid-write): every run ends within 5 s, lab_killed_by_signal', async () => {
  const targets = ['lab', 'parent', 'init', 'mid-write'] as const;
  for (let i = 0; i < 20; i++) {
    const target = targets[i % targets.length]!;
    const r = await startRun(target === 'mid-write' ? 28 : 27);
    assert.ok(r.parent, 'forked from a warm parent');
    await new Promise((res) => setTimeout(res, Math.floor(Math.random() * 1500)));
    const at = Date.now();
    process.kill(target === 'init' ? r.init : target === 'parent' ? r.parent : r.lab, 'SIGKILL');
    const run = await endsPromptly(r.id, at);
    assert.equal(run.status, 'failed', `kill ${i} (${target})`);
    assert.equal(run.error.code, 'lab_killed_by_signal', `kill ${i} (${target}): ${run.error.message}`);
    assert.match(run.error.message, /SIGKILL/);
  }
});

test(`stopped (SIGSTOP) past the stall deadline: the run ends lab_unresponsive within 5 s of it`, async () => {
  const r = await startRun(27);
  const at = Date.now();
  process.kill(r.lab, 'SIGSTOP');
  const run = await endsPromptly(r.id, at + STALL_SECONDS * 1000);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.code, 'lab_unresponsive');
  assert.match(run.error.message, /stopped/);
});

test('cancelled while its lab is stopped: cancelled within 5 s, charged only for the time it ran', async () => {
  const r = await startRun(27);
  process.kill(r.lab, 'SIGSTOP');
  const at = Date.now();
  assert.equal((await call('POST', `/runs/${r.id}/cancel`, { key: owner.key })).status, 200);
  const run = await endsPromptly(r.id, at);
  assert.equal(run.status, 'cancelled');
  const ran = (new Date(run.finished_at).getTime() - new Date(run.started_at).getTime()) / 1000;
  assert.ok(run.credits_settled <= Math.ceil(ran * 10 + 1) / 1e6, `charged ${run.credits_settled} for ${ran} s`);
});

test('a lab that closes its protocol stream early and lingers ends protocol_error within 5 s', async () => {
  const run = await endsPromptly(await submit(25), 'attack');
  assert.equal(run.status, 'failed');
  assert.equal(run.error.code, 'protocol_error');
  assert.match(run.error.message, /closed its protocol stream/);
});

test('a lab whose last protocol message is cut off ends protocol_error, saying so', async () => {
  const run = await endsPromptly(await submit(26), 'attack');
  assert.equal(run.status, 'failed');
  assert.equal(run.error.code, 'protocol_error');
  assert.match(run.error.message, /cut off/);
});

test('after all of it, the worker completes the next run', async () => {
  const res = await call('POST', '/runs', { key: owner.key, headers: idem(), body: { ref: 'platform/sir-epidemic@1.0.0', compute_profile: PROFILE, inputs: {} } });
  const run = await waitForRun(owner.key, res.body.id, 120000);
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
});

test('with its worker killed (no other serving it): a cancelled run ends within 5 s; the sweeper ends one whose execution has had no live process, lab_lost, said in its events, its workflow stopped; a live run is left alone', async () => {
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const client = new Client({ connection });
  const lostWorker = await spawnWorker({ SILICO_COMPUTE_PROFILES: LOST_PROFILE });
  try {
    const lost = await submit(13, LOST_PROFILE);
    const abandoned = await submit(13, LOST_PROFILE);
    const pid = await driverPid(owner.key, lost, 60000);
    await driverPid(owner.key, abandoned, 60000);
    const live = await startRun(27);
    lostWorker.proc.kill('SIGKILL');
    await until(10000, async () => (processAlive(pid) ? undefined : true));
    // Cancel ends a run whatever state its execution is in: here, on a worker that is gone.
    const asked = Date.now();
    assert.equal((await call('POST', `/runs/${abandoned}/cancel`, { key: owner.key })).status, 200);
    const cancelled = await waitForRun(owner.key, abandoned, 10000);
    assert.equal(cancelled.status, 'cancelled');
    const took = new Date(cancelled.finished_at).getTime() - asked;
    assert.ok(took < ENDS_WITHIN_MS, `cancelled within 5 s with its worker gone (took ${took} ms)`);
    const { sweepLostRuns } = createMaintenanceActivities({
      db: testDb(), objects: testObjects(), idempotencyTtlSeconds: 86400, workflowState: workflowStateOf(client), executions: executionProbeOf(client),
    });
    // Past 10 s of silence (the live run says it is alive every 5 s), the lost run is swept;
    // the pass is narrowed to this file's runs, which other files' deliberate outages never are.
    const swept = await until(60000, async () => {
      const ids = await sweepLostRuns(10, [lost, live.id]);
      assert.ok(!ids.includes(live.id), 'a run whose lab is alive is never swept');
      return ids.includes(lost) ? ids : undefined;
    });
    assert.ok(swept.includes(lost));
    const run = await waitForRun(owner.key, lost, 5000);
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'lab_lost');
    assert.match(run.error.message, /no live process for \d+ s/);
    const events = (await call('GET', `/runs/${lost}/events?limit=1000`, { key: owner.key })).body.items as Array<{ message: string; data: Record<string, unknown> }>;
    assert.ok(events.some((e) => e.data.swept === true && /ended by the sweeper/.test(e.message)), 'its events say so');
    assert.equal(await workflowStateOf(client)(runWorkflowId(lost)), 'closed', 'its workflow was stopped');
    assert.ok(run.credits_settled < run.credits_reserved, 'charged for the time it had a process, not its maximum');
    assert.equal((await call('POST', `/runs/${live.id}/cancel`, { key: owner.key })).status, 200);
    assert.equal((await waitForRun(owner.key, live.id)).status, 'cancelled');
  } finally {
    await lostWorker.stop();
    await connection.close();
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { Silico } from '../../sdk/src/index.ts';
import { Client, Connection } from '@temporalio/client';
import { BASE_URL, call, closeTestDb, isZombie, parentPid, retireHosting, newAccount, sandboxUserProcesses, spawnWorker, testDb, until, useTestProfiles, waitForRun, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { acceptInvocation, getInvocation, markWorkflowStarted, requestCancel } from '../../storage/db/hostedInvocations.ts';
import { digestJson } from '../../storage/digest.ts';
import { newId } from '../../storage/ids.ts';
import { CONTROL_TASK_QUEUE, invocationWorkflowId } from '../../kernel/workflowNames.ts';
import { invocationMetadata } from '../../api/invocations/metadata.ts';

// Hosted execution below the HTTP routes: a ready deployment is served from warm
// instances on one worker, an invocation accepted in Postgres runs there under a lease,
// gives a cold run's outputs, stops within 3 s when cancelled and is settled once.

/** Served only by workers this file starts, so one can be killed under an invocation. */
const PROFILE = { id: 'test-hosted', title: 'Test profile of hosted execution', price_per_second_micros: 10, max_runtime_seconds: 120 };
useTestProfiles(PROFILE);
after(closeTestDb);
const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth');
let owner: Awaited<ReturnType<typeof newAccount>>;
let labId = '';
let reference = '';
let packageSha = '';
let client: Client;
let connection: Connection;

/** A published lab of a fresh account, hosted ready on `profile`: its owner, lab, reference and package digest. */
async function deployed(profile: string) {
  const o = await newAccount({ usd: 10 });
  const ws = await workspaceOfLab(o.key, 'Served', LAB);
  const prep = (await call('POST', '/publication-plans', { key: o.key, body: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, version: '1.0.0' } })).body;
  assert.equal((await call('POST', '/publications', { key: o.key, body: { plan_id: prep.plan_id, plan_sha256: prep.plan_sha256 } })).status, 200);
  const release = await until(120_000, async () => testDb()('releases').where({ account_id: o.account.id }).first());
  const plan = (await call('POST', `/labs/${ws.lab_id}/hosting-plans`, {
    key: o.key, headers: { 'Idempotency-Key': crypto.randomUUID() },
    body: { release: { reference: prep.reference, sha256: release.package_sha256.replace(/^sha256:/, '') }, min_instances: 1, max_instances: 2, compute_profile_id: profile },
  })).body;
  assert.equal(plan.status, 'ready', JSON.stringify(plan));
  const requested = await call('POST', '/hosting-requests', { key: o.key, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } });
  assert.equal(requested.status, 201, requested.text);
  await servedAt(ws.lab_id);
  return { owner: o, labId: ws.lab_id, reference: prep.reference as string, packageSha: release.package_sha256 as string };
}

/** The task queue a lab's deployment is served on, once it is (other than `not`). */
const servedAt = (lab: string, not?: string) => until(120_000, async () => {
  const h = await testDb()('hostings').where({ lab_id: lab }).first();
  return h?.status === 'ready' && h.serving_queue && h.serving_queue !== not ? h.serving_queue as string : undefined;
});

before(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  client = new Client({ connection });
  ({ owner, labId, reference, packageSha } = await deployed('cpu-small'));
});
after(async () => {
  // Warm instances are sandboxed processes: none outlives this file.
  if (labId) await retireHosting(owner.key, labId);
  await connection?.close();
});

/**
 * An invocation accepted as the API accepts one: with its workflow started, or (`carried`)
 * as one for a served deployment is, announced to its serving worker with no workflow.
 */
async function invoke(inputs: Record<string, unknown>, seed: number, target = { owner, labId, reference, packageSha }, carried = false): Promise<string> {
  const hosting = await testDb()('hostings').where({ lab_id: target.labId }).first();
  const plan = await createPlan(testDb(), { accountId: target.owner.account.id, kind: 'hosted_invocation', proposal: { inputs }, findings: [], ttlSeconds: 600 });
  const id = newId('inv');
  const row = await acceptInvocation(testDb(), {
    id, account_id: target.owner.account.id, client_id: 'cli_test', lab_id: target.labId, hosting_generation: hosting.generation, reference: target.reference, package_sha256: target.packageSha,
    compute_profile: hosting.compute_profile, inputs, inputs_sha256: digestJson(inputs), seed, max_seconds: 60, reserved_micros: 600, plan_id: plan.id,
  }, carried ? hosting.serving_queue : null);
  if (carried) return id;
  await client.workflow.start('invocationWorkflow', {
    taskQueue: CONTROL_TASK_QUEUE, workflowId: invocationWorkflowId(id), args: [{ invocationId: id }], ...invocationMetadata(BASE_URL, row),
  });
  await markWorkflowStarted(testDb(), id);
  return id;
}

/**
 * Host pids of the processes warm instances forked for invocations: the lab runtime's
 * `driver.py --serve` forks one child per invocation (the same command line; bubblewrap,
 * which carries it as arguments, is not Python).
 */
function invocationChildren(): number[] {
  const serving = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (!path.basename(argv[0] ?? '').startsWith('python') || !argv.includes('--serve')) continue;
      const ppid = parentPid(Number(entry));
      if (ppid !== null && !isZombie(Number(entry))) serving.set(Number(entry), ppid);
    } catch {
      // Gone while listed.
    }
  }
  // A deployment's instances, not the warm parents of runs: their sandbox shows a deployment's folder.
  const ofDeployment = (pid: number) => {
    try {
      const ppid = parentPid(pid);
      return ppid !== null && readFileSync(`/proc/${ppid}/cmdline`, 'utf8').includes('/silico-deployment-');
    } catch {
      return false;
    }
  };
  return [...serving].filter(([, ppid]) => serving.has(ppid) && ofDeployment(ppid)).map(([pid]) => pid);
}

const ended = (id: string, ms = 60_000) => until(ms, async () => {
  const inv = await getInvocation(testDb(), id);
  return inv && ['completed', 'failed', 'cancelled', 'expired'].includes(inv.status) ? inv : undefined;
});

async function coldRun(inputs: Record<string, unknown>, seed: number) {
  const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: reference, inputs, seed, max_runtime_seconds: 60 } });
  assert.equal(res.status, 200, res.text);
  const run = await waitForRun(owner.key, res.body.id);
  assert.equal(run.status, 'completed');
  return (await call('GET', `/runs/${run.id}/results`, { key: owner.key })).body;
}

test('two invocations with different inputs on the warm deployment give two cold runs\' outputs; artifacts by port; settled once', { timeout: 180_000 }, async () => {
  const a = { growth_rate: 0.1, noise: 0.3 };
  const b = { growth_rate: 0.25, noise: 0.01 };
  const first = await ended(await invoke(a, 11));
  const second = await ended(await invoke(b, 12));
  assert.equal(first.status, 'completed', JSON.stringify(first.error));
  assert.equal(second.status, 'completed', JSON.stringify(second.error));
  const [coldA, coldB] = [await coldRun(a, 11), await coldRun(b, 12)];
  for (const k of ['final_size', 'mean_growth']) {
    assert.equal(first.outputs![k], coldA.outputs[k], `${k} of a`);
    assert.equal(second.outputs![k], coldB.outputs[k], `${k} of b`);
  }
  const arts = await testDb()('hosted_invocation_artifacts').where({ invocation_id: first.id });
  const csv = arts.find((x: any) => x.file_name === 'size.csv');
  assert.equal(csv.port, 'size');
  assert.equal(csv.sha256, coldA.artifacts.find((x: any) => x.file_name === 'size.csv').sha256, 'the same bytes as the cold run');
  const txns = await testDb()('ledger_txns').where({ ref: `invocation:${first.id}` }).select('kind');
  assert.deepEqual(txns.map((t: any) => t.kind).sort(), ['reserve', 'settle']);
  assert.ok(Number(first.settled_micros) <= 600);
  // Begun on its announcement and joined by its workflow's activity: leased, and run, once each.
  for (const inv of [first, second]) assert.equal((await getInvocation(testDb(), inv.id))!.attempts, 1, `invocation ${inv.id} leased once`);
});

test('cancelling a running invocation revokes its lease and stops its process within 3 s; only elapsed compute is charged; an ended one is unchanged', { timeout: 120_000 }, async () => {
  const id = await invoke({ window_delay: 2 }, 1);
  await until(30_000, async () => ((await getInvocation(testDb(), id))?.status === 'running' ? true : undefined));
  await new Promise((r) => setTimeout(r, 1000));
  const serving = invocationChildren();
  assert.equal(serving.length, 1, 'the warm instance forked one process for the invocation');
  const asked = Date.now();
  const res = await call('POST', `/hosted-invocations/${id}/cancel`, { key: owner.key });
  assert.equal(res.status, 200, res.text);
  const recorded = await getInvocation(testDb(), id);
  assert.ok(recorded!.cancel_requested_at, 'cancellation recorded');
  assert.ok(recorded!.lease_expires_at === null || recorded!.lease_expires_at.getTime() <= Date.now(), 'the lease is revoked');
  const inv = await ended(id, 10_000);
  const took = Date.now() - asked;
  assert.equal(inv.status, 'cancelled');
  assert.ok(took < 3000, `stopped in ${took} ms`);
  await until(3_000, async () => (serving.every((pid) => !existsSync(`/proc/${pid}`)) ? true : undefined));
  assert.ok(Number(inv.settled_micros) > 0 && Number(inv.settled_micros) < 600, `charged ${inv.settled_micros} of 600`);
  const after = await requestCancel(testDb(), id);
  assert.equal(after.status, 'cancelled');
  assert.equal(after.settled_micros, inv.settled_micros);
  // The deployment serves on.
  const next = await ended(await invoke({ growth_rate: 0.1 }, 3));
  assert.equal(next.status, 'completed');
});

test('a warm instance killed while serving: its invocation ends instance_lost within 5 s, charged for the time it ran; another instance serves the next', { timeout: 180_000 }, async () => {
  // A worker of this test's own, so its warm instances are told apart by their sandbox uids.
  const worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
  try {
    const target = await deployed(PROFILE.id);
    const id = await invoke({ window_delay: 2 }, 4, target);
    // The invocation runs in a fork of its instance: a sandbox process whose parent is one too.
    const instance = await until(30_000, async () => {
      const procs = sandboxUserProcesses(worker.uids);
      return procs.map((p) => parentPid(p) ?? 0).find((pp) => procs.includes(pp));
    });
    const at = Date.now();
    process.kill(instance, 'SIGKILL');
    const inv = await ended(id, 10_000);
    const took = Date.now() - at;
    assert.equal(inv.status, 'failed');
    assert.equal(inv.error?.code, 'instance_lost', JSON.stringify(inv.error));
    assert.match(inv.error!.message, /killed by SIGKILL/);
    assert.ok(took < 5000, `ended ${took} ms after its instance died`);
    assert.ok(Number(inv.settled_micros) > 0 && Number(inv.settled_micros) < 600, `charged ${inv.settled_micros} of 600`);
    const next = await ended(await invoke({ growth_rate: 0.1 }, 5, target));
    assert.equal(next.status, 'completed', JSON.stringify(next.error));
    await retireHosting(target.owner.key, target.labId);
  } finally {
    await worker.stop();
  }
});

test('pausing the deployment stops serving it; an invocation then ends deployment_paused, nothing charged; resuming serves again', { timeout: 120_000 }, async () => {
  const h = (await call('GET', `/labs/${labId}/hosting`, { key: owner.key })).body;
  const ready = (await call('GET', '/account', { key: owner.key })).body.holdings.hosting;
  assert.equal(ready.hourly_usd, 3600 * 10 / 1e6, 'one warm cpu-small instance while ready');
  assert.equal((await call('PATCH', `/labs/${labId}/hosting`, { key: owner.key, body: { revision: h.revision, action: 'pause' } })).status, 200);
  await until(30_000, async () => {
    const row = await testDb()('hostings').where({ lab_id: labId }).first();
    return row.status === 'paused' && !row.serving_queue ? true : undefined;
  });
  // The time it stood ready is charged to the owner when it leaves ready; paused costs nothing.
  const bills = await testDb()('ledger_txns').where('ref', 'like', `hosting:${labId}:%`).select('id');
  assert.equal(bills.length, 1);
  const paused = (await call('GET', '/account', { key: owner.key })).body.holdings.hosting;
  assert.equal(paused.hourly_usd, 0);
  assert.ok(paused.spent_usd > 0 && paused.spent_usd < 0.036, `spent ${paused.spent_usd}`);
  const refused = await ended(await invoke({}, 1));
  assert.equal(refused.status, 'failed');
  assert.equal(refused.error?.code, 'deployment_paused');
  assert.equal(Number(refused.settled_micros), 0);
  const pausedHosting = (await call('GET', `/labs/${labId}/hosting`, { key: owner.key })).body;
  assert.equal((await call('PATCH', `/labs/${labId}/hosting`, { key: owner.key, body: { revision: pausedHosting.revision, action: 'resume' } })).status, 200);
  await until(60_000, async () => ((await testDb()('hostings').where({ lab_id: labId }).first()).serving_queue ? true : undefined));
  assert.equal((await ended(await invoke({}, 2))).status, 'completed');
});

test('kill -9 of the worker carrying an invocation (no workflow yet): the deployment moves to another worker and the invocation, handed to its workflow, is retried there to completion or ends expired, charged once; one cancelled after its worker was killed ends cancelled within seconds with no workflow, charged since it began', { timeout: 360_000 }, async () => {
  let worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
  try {
    const target = await deployed(PROFILE.id);
    const first = await servedAt(target.labId);
    // Carried by its worker with no workflow: the recovery hands it to one once its lease expires.
    const id = await invoke({ window_delay: 1 }, 5, target, true);
    await until(30_000, async () => ((await getInvocation(testDb(), id))?.status === 'running' ? true : undefined));
    worker.proc.kill('SIGKILL');
    await new Promise((r) => worker.proc.once('exit', r));
    worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
    const moved = await servedAt(target.labId, first);
    assert.notEqual(moved, first, 'served by the new worker');
    const inv = await ended(id, 120_000);
    assert.ok(['completed', 'expired'].includes(inv.status), `${inv.status} ${JSON.stringify(inv.error)}`);
    assert.ok(inv.workflow_started_at, 'its workflow took it on when its worker was lost');
    const txns = await testDb()('ledger_txns').where({ ref: `invocation:${id}` }).select('kind');
    assert.deepEqual(txns.map((t: any) => t.kind).sort(), ['reserve', 'settle'], 'reserved and settled once');
    assert.equal((await ended(await invoke({}, 6, target))).status, 'completed', 'the moved deployment serves');

    // Its worker killed again under one, which is then cancelled: nobody is left to stop
    // or to run it, and the recovery ends it.
    const doomed = await invoke({ window_delay: 2 }, 7, target, true);
    await until(30_000, async () => ((await getInvocation(testDb(), doomed))?.status === 'running' ? true : undefined));
    worker.proc.kill('SIGKILL');
    await new Promise((r) => worker.proc.once('exit', r));
    const asked = Date.now();
    const res = await call('POST', `/hosted-invocations/${doomed}/cancel`, { key: target.owner.key });
    assert.equal(res.status, 200, res.text);
    const cancelled = await ended(doomed, 15_000);
    const took = Date.now() - asked;
    assert.equal(cancelled.status, 'cancelled', JSON.stringify(cancelled.error));
    assert.ok(took < 6000, `ended ${took} ms after the cancellation`);
    assert.equal(cancelled.workflow_started_at, null, 'ended by the recovery, with no workflow');
    assert.ok(Number(cancelled.settled_micros) > 0 && Number(cancelled.settled_micros) <= 600, `charged ${cancelled.settled_micros} of 600`);
    const kinds = await testDb()('ledger_txns').where({ ref: `invocation:${doomed}` }).select('kind');
    assert.deepEqual(kinds.map((t: any) => t.kind).sort(), ['reserve', 'settle'], 'reserved and settled once');
    // Served again so that its lifecycle retires it at once.
    worker = await spawnWorker({ SILICO_COMPUTE_PROFILES: PROFILE.id });
    await retireHosting(target.owner.key, target.labId);
  } finally {
    await worker.stop();
  }
});

test('the doors: `silico invoke REF --input` and the SDK\'s hostedInvocations.invoke() plan, execute and wait for one invocation', { timeout: 120_000 }, async () => {
  const bin = path.join(REPO_ROOT, 'sdk/bin/silico.js');
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SILICO_CONFIG_DIR: await mkdtemp(path.join(tmpdir(), 'silico-cli-')), SILICO_BASE_URL: BASE_URL, SILICO_API_KEY: owner.key };
  const { stdout, code } = await promisify(execFile)(process.execPath, [bin, '--json', 'invoke', reference, '--input', 'growth_rate=0.2', '--seed', '9'], { env }).then((r) => ({ ...r, code: 0 }));
  assert.equal(code, 0);
  const viaCli = JSON.parse(stdout);
  assert.equal(viaCli.status, 'completed');
  const sdk = new Silico({ apiKey: owner.key, baseUrl: BASE_URL });
  const viaSdk = await sdk.hostedInvocations.invoke(reference, packageSha.replace(/^sha256:/, ''), { growth_rate: 0.2 }, { seed: 9, timeoutMs: 60_000 });
  assert.equal(viaSdk.status, 'completed');
  assert.equal(viaSdk.outputs!.final_size, viaCli.outputs.final_size, 'same inputs and seed, same outputs');
  await assert.rejects(sdk.hostedInvocations.invoke(reference, packageSha.replace(/^sha256:/, ''), { fail: true }, { timeoutMs: 60_000 }), (e: Error) => e.name === 'InvocationFailed' && /lab_error/.test(e.message));
  // A handle, as runs have: started without waiting, waited on after a timeout, its artifact by port; cancelling an ended one changes nothing.
  const handle = await sdk.hostedInvocations.start(reference, packageSha.replace(/^sha256:/, ''), { growth_rate: 0.2, window_delay: 0.3 }, { seed: 9 });
  assert.equal(handle.lastSeen?.status, 'queued');
  await assert.rejects(handle.wait({ timeoutMs: 0 }), (e: Error & { handle?: unknown }) => e.name === 'InvocationTimeout' && e.handle === handle);
  const done = await handle.wait({ timeoutMs: 60_000 });
  assert.equal(done.outputs!.final_size, viaSdk.outputs!.final_size, 'the delay changes nothing computed');
  const size = await handle.artifact('size') as unknown as { sha256: string };
  assert.equal(size.sha256, done.artifacts.find((a) => a.port === 'size')!.sha256);
  assert.equal((await handle.cancel()).status, 'completed');
});

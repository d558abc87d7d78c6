import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { call, closeTestDb, errorOf, driverPid, hostedLabOwner, newAccount, processAlive, publishFixtureLab, testDb, testObjects, until, waitForRun } from '../helpers.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { acceptInvocation, markWorkflowStarted } from '../../storage/db/hostedInvocations.ts';
import { digestJson } from '../../storage/digest.ts';
import { createMaintenanceActivities } from '../../activities/maintenance.ts';
import { executionProbeOf, workflowStateOf } from '../../activities/workflowState.ts';
import { insertDataset } from '../../storage/db/datasets.ts';
import { getBalances } from '../../storage/ledger.ts';
import { newId } from '../../storage/ids.ts';
import { hostingWorkflowId, runWorkflowId, sessionWorkflowId } from '../../kernel/workflowNames.ts';
import { createSession } from '../../storage/db/sessions.ts';
import { createPurchase } from '../../storage/db/purchases.ts';

// Every record a workflow owns ends in a truthful terminal state: the hourly
// reconciliation closes what a workflow that is gone left open.

let connection: Connection;
let client: Client;
before(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  client = new Client({ connection, namespace: 'default' });
});
after(async () => {
  await connection?.close();
  await closeTestDb();
});

/**
 * A pass of the reconciliation over these accounts' records alone: they are dated two
 * hours back and the pass takes only records older than one, so no other file's record
 * (fresh, its workflow perhaps starting that moment) is closed under it.
 */
async function reconcileOwn(...accountIds: string[]) {
  for (const table of ['runs', 'datasets', 'hosted_invocations', 'hostings', 'sessions', 'purchases']) {
    await testDb()(table).whereIn('account_id', accountIds).update({ created_at: testDb().raw(`now() - interval '2 hours'`) });
  }
  const { reconcileOrphans } = createMaintenanceActivities({ db: testDb(), objects: testObjects(), idempotencyTtlSeconds: 86400, workflowState: workflowStateOf(client), executions: executionProbeOf(client) });
  return reconcileOrphans(3600);
}

test('a run whose workflow was terminated is failed with nothing charged; a dataset version with no workflow fails; open workflows are left alone', async () => {
  const owner = await newAccount({ usd: 5 });
  const slow = await publishFixtureLab(owner, 'slow-lab');
  const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: slow, inputs: { seconds_per_window: 0.2, busy_seconds: 60 }, max_runtime_seconds: 120 } });
  assert.equal(started.status, 200, started.text);
  const pid = await driverPid(owner.key, started.body.id);
  const alive = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: slow, inputs: { seconds_per_window: 0.2, busy_seconds: 60 }, max_runtime_seconds: 120 } });
  await client.workflow.getHandle(runWorkflowId(started.body.id)).terminate('test: the workflow is gone');
  // The terminated workflow's execution is cancelled at its next heartbeat; the record is left running.
  await until(30000, async () => (processAlive(pid) ? undefined : true));
  assert.equal((await call('GET', `/runs/${started.body.id}`, { key: owner.key })).body.status, 'running');
  const orphan = crypto.randomUUID();
  await insertDataset(testDb(), { id: newId('ds'), account_id: owner.account.id, name: `orphan-${orphan.slice(0, 8)}`, manifest: { members: [] }, manifest_sha256: 'f'.repeat(64) });

  const closed = await reconcileOwn(owner.account.id);
  assert.ok(closed.run >= 1 && closed.dataset >= 1, JSON.stringify(closed));
  const run = await waitForRun(owner.key, started.body.id, 5000);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.code, 'internal_error');
  assert.match(run.error.message, /reconciliation/);
  assert.equal(run.credits_settled, 0);
  assert.equal((await call('GET', `/runs/${alive.body.id}`, { key: owner.key })).body.status !== 'failed', true, 'a run whose workflow is open is not touched');
  const ds = await testDb()('datasets').where({ account_id: owner.account.id, name: `orphan-${orphan.slice(0, 8)}` }).first();
  assert.equal(ds.status, 'failed');
  await call('POST', `/runs/${alive.body.id}/cancel`, { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() } });
  await waitForRun(owner.key, alive.body.id);
  assert.equal((await getBalances(testDb(), owner.account.id)).reserved_micros, 0, 'every reservation released');
});

test('an invocation whose workflow never started fails with nothing charged; a hosting whose lifecycle was terminated fails', { timeout: 120_000 }, async () => {
  const o = await hostedLabOwner();
  const plan = (await call('POST', `/labs/${o.labId}/hosting-plans`, { key: o.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: o.reference, sha256: o.sha256 } } })).body;
  assert.equal((await call('POST', '/hosting-requests', { key: o.owner.key, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } })).status, 201);
  const hosting = await until(60_000, async () => {
    const h = await testDb()('hostings').where({ lab_id: o.labId }).first();
    return h?.status === 'ready' ? h : undefined;
  });
  const invPlan = await createPlan(testDb(), { accountId: o.owner.account.id, kind: 'hosted_invocation', proposal: {}, findings: [], ttlSeconds: 600 });
  const id = newId('inv');
  await acceptInvocation(testDb(), {
    id, account_id: o.owner.account.id, client_id: 'cli_test', lab_id: o.labId, hosting_generation: hosting.generation, reference: o.reference, package_sha256: hosting.package_sha256,
    compute_profile: hosting.compute_profile, inputs: {}, inputs_sha256: digestJson({}), seed: 1, max_seconds: 60, reserved_micros: 600, plan_id: invPlan.id,
  }, null);
  // Recorded as its workflow's, as the api records one once it started it: none is there.
  await markWorkflowStarted(testDb(), id);
  await client.workflow.getHandle(hostingWorkflowId(o.labId)).terminate('test: the lifecycle is gone');

  const closed = await reconcileOwn(o.owner.account.id);
  assert.ok(closed.invocation >= 1 && closed.hosting >= 1, JSON.stringify(closed));
  const inv = await testDb()('hosted_invocations').where({ id }).first();
  assert.equal(inv.status, 'failed');
  assert.equal(Number(inv.settled_micros), 0);
  assert.equal((await testDb()('hostings').where({ lab_id: o.labId }).first()).status, 'failed');
  assert.equal((await getBalances(testDb(), o.owner.account.id)).reserved_micros, 0, 'the reservation released');
});

test('a session whose workflow never started, or closed without completing it, fails saying why; one whose workflow runs stays open', async () => {
  const owner = await newAccount();
  // What a failed cleanup leaves: the row, and no workflow session-<id>.
  const neverStarted = newId('ses');
  await createSession(testDb(), { id: neverStarted, account_id: owner.account.id, title: 'no workflow', goal: null });
  const ended = (await call('POST', '/sessions', { key: owner.key, body: { title: 'workflow terminated' } })).body.session_id;
  await client.workflow.getHandle(sessionWorkflowId(ended)).terminate('test: the session workflow is gone');
  const alive = (await call('POST', '/sessions', { key: owner.key, body: { title: 'workflow running' } })).body.session_id;

  const closed = await reconcileOwn(owner.account.id);
  assert.ok(closed.session >= 2, JSON.stringify(closed));

  const missing = (await call('GET', `/sessions/${neverStarted}`, { key: owner.key })).body;
  assert.equal(missing.status, 'failed');
  assert.equal(missing.error.code, 'internal_error');
  assert.match(missing.error.message, new RegExp(`session-${neverStarted} does not exist`));
  assert.match(missing.error.message, /hourly reconciliation/);
  assert.equal(missing.completed_at, null, 'it did not complete');
  const gone = (await call('GET', `/sessions/${ended}`, { key: owner.key })).body;
  assert.equal(gone.status, 'failed');
  assert.match(gone.error.message, new RegExp(`session-${ended} has closed without completing`));
  assert.deepEqual(gone.next_actions ?? [], []);
  const running = (await call('GET', `/sessions/${alive}`, { key: owner.key })).body;
  assert.deepEqual([running.status, running.error], ['open', null], 'a session whose workflow is open is not touched');

  // A failed session is read-only, and says so rather than failing on the missing workflow.
  const attach = await call('POST', `/sessions/${ended}/external-sessions`, { key: owner.key, body: { provider: 'chat', external_id: 'c1' } });
  assert.equal(attach.status, 409, attach.text);
  assert.deepEqual([errorOf(attach).code, errorOf(attach).param], ['session_failed', 'session_id']);
  const listed = (await call('GET', '/sessions?status=failed', { key: owner.key })).body.items.map((s: { session_id: string }) => s.session_id).sort();
  assert.deepEqual(listed, [neverStarted, ended].sort());
  assert.equal((await reconcileOwn(owner.account.id)).session, 0, 'a failed session is not closed twice');
});

test('a purchase past its expiry whose workflow never started expires with no credit; one not yet expired is left alone', async () => {
  const owner = await newAccount();
  const stale = await createPurchase(testDb(), { id: crypto.randomUUID(), account_id: owner.account.id, key_id: owner.keyId, amount_micros: 20_000_000, expires_at: new Date(Date.now() - 1000) });
  const open = await createPurchase(testDb(), { id: crypto.randomUUID(), account_id: owner.account.id, key_id: owner.keyId, amount_micros: 20_000_000, expires_at: new Date(Date.now() + 3_600_000) });
  const closed = await reconcileOwn(owner.account.id);
  assert.ok(closed.purchase >= 1, JSON.stringify(closed));
  assert.equal((await testDb()('purchases').where({ id: stale.id }).first()).status, 'expired');
  assert.equal((await testDb()('purchases').where({ id: open.id }).first()).status, 'pending');
  assert.equal((await getBalances(testDb(), owner.account.id)).available_micros, 0, 'nothing credited');
});

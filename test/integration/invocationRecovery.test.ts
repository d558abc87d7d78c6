import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { call, closeTestDb, hostedLabOwner, retireHosting, testDb, until } from '../helpers.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { acceptInvocation, getInvocation, leaseInvocation, type InvocationRow } from '../../storage/db/hostedInvocations.ts';
import { digestJson } from '../../storage/digest.ts';
import { newId } from '../../storage/ids.ts';
import { invocationWorkflowId } from '../../kernel/workflowNames.ts';
import { openRecords } from '../../storage/db/reconciliation.ts';
import { RECOVER_AFTER_SECONDS } from '../../deploy/invocationRecovery.ts';

// An invocation of a served deployment is carried by its serving worker alone, with no
// workflow; the workers' recovery (deploy/invocationRecovery.ts) hands one its worker is
// not carrying to its workflow within seconds; the reconciliation leaves one under a live
// lease alone. The real stack and its shared worker.

let connection: Connection;
let client: Client;
let lab: Awaited<ReturnType<typeof hostedLabOwner>>;
let hosting: { generation: number; compute_profile: string };

before(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  client = new Client({ connection });
  lab = await hostedLabOwner();
  const plan = (await call('POST', `/labs/${lab.labId}/hosting-plans`, { key: lab.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: lab.reference, sha256: lab.sha256 } } })).body;
  assert.equal((await call('POST', '/hosting-requests', { key: lab.owner.key, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } })).status, 201);
  hosting = await until(120_000, async () => {
    const h = await testDb()('hostings').where({ lab_id: lab.labId }).first();
    return h?.status === 'ready' && h.serving_queue ? h : undefined;
  });
});
after(async () => {
  if (lab) await retireHosting(lab.owner.key, lab.labId);
  await connection?.close();
  await closeTestDb();
});

/** An invocation recorded as the api records one for a served deployment, its announcement missed (sent where no worker listens). */
async function unannounced(inputs: Record<string, unknown>): Promise<string> {
  const plan = await createPlan(testDb(), { accountId: lab.owner.account.id, kind: 'hosted_invocation', proposal: { inputs }, findings: [], ttlSeconds: 600 });
  const id = newId('inv');
  await acceptInvocation(testDb(), {
    id, account_id: lab.owner.account.id, client_id: 'cli_test', lab_id: lab.labId, hosting_generation: hosting.generation, reference: lab.reference, package_sha256: lab.sha256,
    compute_profile: hosting.compute_profile, inputs, inputs_sha256: digestJson(inputs), seed: 1, max_seconds: 60, reserved_micros: 600, plan_id: plan.id,
  }, 'a-queue-no-worker-serves');
  return id;
}

const ended = (id: string, ms = 30_000) => until(ms, async () => {
  const inv = await getInvocation(testDb(), id);
  return inv && ['completed', 'failed', 'cancelled', 'expired'].includes(inv.status) ? inv : undefined;
});

const ledgerKinds = async (id: string) => (await testDb()('ledger_txns').where({ ref: `invocation:${id}` }).pluck('kind')).sort();

test('an invocation executed through the API on a served deployment is carried by its worker alone: completed, settled once, with no workflow', { timeout: 60_000 }, async () => {
  const plan = (await call('POST', '/hosted-invocation-plans', { key: lab.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { reference: lab.reference, sha256: lab.sha256, inputs: { growth_rate: 0.2 } } })).body;
  const res = await call('POST', '/hosted-invocations', { key: lab.owner.key, headers: { Prefer: 'wait=30' }, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } });
  assert.equal(res.status, 201, res.text);
  assert.equal(res.body.status, 'completed', JSON.stringify(res.body.error));
  const id = res.body.invocation_id as string;
  const row = (await getInvocation(testDb(), id))!;
  assert.equal(row.attempts, 1, 'leased once');
  // Leased within the recovery's grace (as it is but on a machine stalled for seconds): no workflow.
  if (row.started_at!.getTime() - row.created_at.getTime() < RECOVER_AFTER_SECONDS * 1000) {
    assert.equal(row.workflow_started_at, null, 'no workflow was started for it');
    await assert.rejects(client.workflow.getHandle(invocationWorkflowId(id)).describe(), WorkflowNotFoundError);
  }
  assert.deepEqual(await ledgerKinds(id), ['reserve', 'settle']);
});

test('an invocation whose announcement never came is handed to its workflow within seconds, which sends it to the serving worker: completed once', { timeout: 60_000 }, async () => {
  const accepted = Date.now();
  const id = await unannounced({ growth_rate: 0.1 });
  const inv = await ended(id);
  assert.equal(inv.status, 'completed', JSON.stringify(inv.error));
  assert.ok(inv.workflow_started_at, 'its workflow was started');
  assert.ok(inv.workflow_started_at.getTime() - accepted < 10_000, `handed over ${inv.workflow_started_at.getTime() - accepted} ms after its acceptance`);
  assert.equal(inv.attempts, 1);
  // The execution records the ending; its workflow completes just after.
  const handle = client.workflow.getHandle(invocationWorkflowId(id));
  assert.equal(await handle.result(), 'completed');
  assert.equal((await handle.describe()).status.name, 'COMPLETED');
  assert.deepEqual(await ledgerKinds(id), ['reserve', 'settle']);
});

test('under a live lease an invocation without a workflow is left to its worker, by the recovery and the reconciliation; once its lease is revoked by a cancellation nobody carries out, the recovery ends it cancelled', { timeout: 60_000 }, async () => {
  const id = await unannounced({ growth_rate: 0.1 });
  // Leased as its worker would lease it, by a worker that then carries out nothing.
  const leased = await leaseInvocation(testDb(), id, 60);
  assert.deepEqual(leased, { status: 'running', attempt: 1 });
  // What the reconciliation would close now (read only: a pass here would close other files' records).
  assert.ok(!(await openRecords(testDb(), 0, 10_000)).some((r) => r.id === id), 'the reconciliation leaves it to its lease');
  // Three recovery passes later it is as it was.
  await new Promise((r) => setTimeout(r, 3500));
  const meanwhile = (await getInvocation(testDb(), id)) as InvocationRow;
  assert.deepEqual([meanwhile.status, meanwhile.workflow_started_at], ['running', null]);

  const cancelled = await call('POST', `/hosted-invocations/${id}/cancel`, { key: lab.owner.key });
  assert.equal(cancelled.status, 200, cancelled.text);
  const inv = await ended(id);
  assert.equal(inv.status, 'cancelled');
  assert.equal(inv.workflow_started_at, null, 'the recovery ended it, with no workflow');
  assert.ok(Number(inv.settled_micros) > 0 && Number(inv.settled_micros) <= 600, `charged the time since it began: ${inv.settled_micros} of 600`);
  assert.deepEqual(await ledgerKinds(id), ['reserve', 'settle']);
});

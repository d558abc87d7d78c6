import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { closeTestDb, newAccount, testDb, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { acceptInvocation, markWorkflowStarted, finishInvocation, getInvocation, invocationArtifacts, leaseInvocation, renewLease, type InvocationResult } from '../../storage/db/hostedInvocations.ts';
import { getBalances } from '../../storage/ledger.ts';
import { digestJson } from '../../storage/digest.ts';
import { newId } from '../../storage/ids.ts';

// An invocation's ending commits only once its artifacts' bytes are stored, its
// statements made while they are: never a record naming bytes the store lacks.

after(closeTestDb);
let owner: Awaited<ReturnType<typeof newAccount>>;
let labId = '';
before(async () => {
  owner = await newAccount({ usd: 1 });
  labId = (await workspaceOfLab(owner.key, 'Ending', path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth'))).lab_id;
});

/** An invocation accepted (plan used, 600 micro-dollars reserved), with no workflow: nothing else ends it. */
async function accepted(): Promise<string> {
  const inputs = { growth_rate: 0.1 };
  const plan = await createPlan(testDb(), { accountId: owner.account.id, kind: 'hosted_invocation', proposal: { inputs }, findings: [], ttlSeconds: 600 });
  const id = newId('inv');
  await acceptInvocation(testDb(), {
    id, account_id: owner.account.id, client_id: 'cli_test', lab_id: labId, hosting_generation: 1, reference: `${owner.account.namespace}/ending@1.0.0`, package_sha256: 'a'.repeat(64),
    compute_profile: 'cpu-small', inputs, inputs_sha256: digestJson(inputs), seed: 1, max_seconds: 60, reserved_micros: 600, plan_id: plan.id,
  }, null);
  // Recorded as its workflow's (so the workers' recovery leaves it), with none there.
  await markWorkflowStarted(testDb(), id);
  return id;
}

const result = (id: string): InvocationResult => ({
  outputs: { final_size: 1.5 },
  artifacts: [{ invocation_id: id, port: 'size', file_name: 'size.csv', content_type: 'text/csv', format: 'csv', size_bytes: 10, sha256: 'b'.repeat(64) }],
});

test('the ending waits for its bytes: until they are stored nothing of it is seen and the account is not held, then all of it at once', async () => {
  const id = await accepted();
  let stored!: () => void;
  const storing = new Promise<void>((resolve) => { stored = resolve; });
  const ending = finishInvocation(testDb(), { id, status: 'completed', computeSeconds: 0.01 }, result(id), storing);
  try {
    // Its first statements are made; uncommitted, another connection sees it as accepted.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await getInvocation(testDb(), id))!.status, 'queued');
    assert.deepEqual(await invocationArtifacts(testDb(), id), []);
    // The account's balance is settled only after the bytes: another acceptance of the account meanwhile is not kept waiting.
    const other = await Promise.race([accepted(), new Promise<never>((_, reject) => setTimeout(() => reject(new Error('an acceptance waited on the bytes')), 5000))]);
    assert.equal((await getInvocation(testDb(), other))!.status, 'queued');
  } finally {
    stored();
  }
  assert.equal(await ending, 'completed');
  const done = (await getInvocation(testDb(), id))!;
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.outputs, { final_size: 1.5 });
  const { price_per_second_micros: price } = await testDb()('compute_profiles').where({ id: 'cpu-small' }).first('price_per_second_micros');
  assert.equal(Number(done.settled_micros), Math.ceil(0.01 * Number(price)), 'a hundredth of a second of cpu-small, rounded up');
  assert.deepEqual((await invocationArtifacts(testDb(), id)).map((a) => a.sha256), ['b'.repeat(64)]);
});

test('bytes that fail to be stored leave no ending: nothing settled, no artifact, the invocation as it was', async () => {
  const id = await accepted();
  const balance = await getBalances(testDb(), owner.account.id);
  const failing = Promise.reject(new Error('the object store is down'));
  await assert.rejects(finishInvocation(testDb(), { id, status: 'completed', computeSeconds: 0.01 }, result(id), failing), /object store is down/);
  const row = (await getInvocation(testDb(), id))!;
  assert.equal(row.status, 'queued');
  assert.equal(row.settled_micros, null);
  assert.deepEqual(await invocationArtifacts(testDb(), id), []);
  assert.deepEqual(await getBalances(testDb(), owner.account.id), balance, 'nothing charged or released');
});

test('an attempt presumed lost whose lease a later attempt took can neither renew it nor record its ending; the later attempt ends it', async () => {
  const id = await accepted();
  const first = await leaseInvocation(testDb(), id, 5);
  assert.deepEqual(first, { status: 'running', attempt: 1 });
  assert.equal(await renewLease(testDb(), id, 5, 1), 'held');
  // The first attempt's worker was presumed lost: the retry takes the lease.
  const second = await leaseInvocation(testDb(), id, 5);
  assert.deepEqual(second, { status: 'running', attempt: 2 });
  assert.equal(await renewLease(testDb(), id, 5, 1), 'superseded', 'the first attempt learns at its next renewal');
  assert.equal(await renewLease(testDb(), id, 5, 2), 'held');
  assert.equal(await finishInvocation(testDb(), { id, status: 'completed', computeSeconds: 0.01 }, result(id), Promise.resolve(), 1), 'superseded');
  const still = (await getInvocation(testDb(), id))!;
  assert.equal(still.status, 'running', 'the first attempt recorded nothing');
  assert.equal(still.settled_micros, null);
  assert.deepEqual(await invocationArtifacts(testDb(), id), []);
  assert.equal(await finishInvocation(testDb(), { id, status: 'completed', computeSeconds: 0.02 }, result(id), Promise.resolve(), 2), 'completed');
  assert.equal((await getInvocation(testDb(), id))!.status, 'completed');
  // A cancellation revokes whichever attempt holds it.
  const other = await accepted();
  await leaseInvocation(testDb(), other, 5);
  await testDb()('hosted_invocations').where({ id: other }).update({ cancel_requested_at: testDb().fn.now() });
  assert.equal(await renewLease(testDb(), other, 5, 1), 'revoked');
});

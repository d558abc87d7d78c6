import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { call, closeTestDb, newAccount, testDb, testObjects, waitForRun } from '../helpers.ts';
import { createExecutionActivities } from '../../activities/execution/execute.ts';
import { createSandbox } from '../../activities/execution/sandbox.ts';
import { loadConfig } from '../../kernel/config.ts';

after(closeTestDb);

test('execution that finds its run cancelled before it began ends it as cancelled; an ended run is skipped', async () => {
  const owner = await newAccount({ usd: 1 });
  const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 60 } });
  assert.equal(res.status, 200, res.text);
  const run = await waitForRun(owner.key, res.body.id);
  const { executeLab } = createExecutionActivities({ db: testDb(), objects: testObjects(), python: '/nonexistent/python', environments: loadConfig().environments, sandbox: createSandbox(loadConfig().sandbox) });
  const env = new MockActivityEnvironment();

  assert.deepEqual(await env.run(executeLab, { runId: run.id }), { status: 'skipped' }, 'already completed: left as it is');
  // The window the CLI's Ctrl-C once hit: the slot was taken (running), then the cancel
  // request marked it cancelling before the execution activity started.
  await testDb()('runs').where({ id: run.id }).update({ status: 'cancelling' });
  assert.deepEqual(await env.run(executeLab, { runId: run.id }), { status: 'cancelled', error: null });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { passportWorkflow } from '../../workflows/passport.ts';
import { CONTROL_TASK_QUEUE, passportWorkflowId } from '../../kernel/workflowNames.ts';
import type { PassportArgs } from '../../activities/passport/activities.ts';

// passportWorkflow with its activities stubbed: every check once, then one seal; only
// identifiers in its history; a failing check discards what was staged. Its history replays.
const testEnv = useWorkflowEnvironment();

const CHECK_ACTIVITIES = ['passportPackageIntegrity', 'passportArtifactHashes', 'passportContracts', 'passportProvenance', 'passportReproducibility'];

async function build(fail?: string) {
  const env = testEnv();
  const args: PassportArgs = { passportId: `pp_${crypto.randomUUID()}`, accountId: 'acct_test', subject: { kind: 'run', run_id: crypto.randomUUID() } };
  const calls: string[] = [];
  const activity = (name: string) => async (a: PassportArgs) => {
    assert.deepEqual(a, args, `${name} gets the identifiers`);
    calls.push(name);
    if (name === fail) throw ApplicationFailure.nonRetryable('the store answered nonsense');
    return name === 'sealPassport' ? a.passportId : undefined;
  };
  const activities = Object.fromEntries([...CHECK_ACTIVITIES, 'sealPassport', 'discardPassport'].map((n) => [n, activity(n)]));
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath, activities });
  const workflowId = passportWorkflowId(args.passportId);
  const outcome = await worker.runUntil(env.client.workflow.execute(passportWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [args] }).catch((err: unknown) => err));
  return { args, calls, outcome, history: await env.client.workflow.getHandle(workflowId).fetchHistory(), workflowId };
}

test('a passport build runs each check once, then seals once, and returns the passport id; its history holds identifiers only and replays', async () => {
  const { args, calls, outcome, history, workflowId } = await build();
  assert.equal(outcome, args.passportId);
  assert.deepEqual(calls.slice(0, 5).sort(), [...CHECK_ACTIVITIES].sort(), 'every check ran, once');
  assert.deepEqual(calls.slice(5), ['sealPassport'], 'sealed after every check, once');
  const largest = Math.max(...history.events!.map((e) => JSON.stringify(e).length));
  assert.ok(largest < 4096, `no evidence travels through the workflow (largest event ${largest} bytes)`);
  await Worker.runReplayHistory({ workflowsPath }, history, workflowId);
});

test('a check that cannot be done fails the build, and the evidence staged so far is discarded; nothing is sealed', async () => {
  const { calls, outcome, history, workflowId } = await build('passportArtifactHashes');
  assert.ok(outcome instanceof WorkflowFailedError, `the build failed: ${String(outcome)}`);
  assert.ok(!calls.includes('sealPassport'), 'nothing signed');
  assert.equal(calls.at(-1), 'discardPassport');
  await Worker.runReplayHistory({ workflowsPath }, history, workflowId);
});

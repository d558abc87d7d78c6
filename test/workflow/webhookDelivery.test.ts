import { test } from 'node:test';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { stateQuery } from '../../workflows/explain.ts';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { webhookDeliveryWorkflow, type WebhookDeliveryArgs } from '../../workflows/webhookDelivery.ts';
import { CONTROL_TASK_QUEUE, webhookDeliveryWorkflowId } from '../../kernel/workflowNames.ts';
import type { DeliveryRef } from '../../activities/webhooks.ts';

// webhookDeliveryWorkflow with its activities stubbed: attempts until one delivers, waiting
// twice as long after each failure up to the cap; dead-lettered once the window would be
// passed; an attempt that finds the delivery ended (removed endpoint, replayed elsewhere) ends it.
const testEnv = useWorkflowEnvironment();

async function deliver(outcomes: Array<'fail' | 'deliver' | 'gone'>, window: Partial<WebhookDeliveryArgs> = {}) {
  const env = testEnv();
  const args: WebhookDeliveryArgs = { deliveryId: `whd_${crypto.randomUUID()}`, generation: 1, firstRetryMs: 100, maxRetryMs: 400, retryForMs: 60_000, ...window };
  const attempts: number[] = [];
  const dead: DeliveryRef[] = [];
  const started = Date.now();
  const worker = await Worker.create({
    connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath,
    activities: {
      async webhookAttempt(ref: DeliveryRef) {
        assert.deepEqual(ref, { deliveryId: args.deliveryId, generation: 1 });
        attempts.push(Date.now() - started);
        const o = outcomes[attempts.length - 1] ?? 'fail';
        return { done: o !== 'fail', delivered: o === 'deliver' };
      },
      async webhookDeadLetter(ref: DeliveryRef) {
        dead.push(ref);
      },
    },
  });
  const workflowId = webhookDeliveryWorkflowId(args.deliveryId, 1);
  return worker.runUntil(async () => {
    const handle = await env.client.workflow.start(webhookDeliveryWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [args] });
    const outcome = await handle.result();
    // What an operator reads of it once it ended: its current details and `state` query.
    const ended = { details: (await handle.query(workflowMetadataQuery)).currentDetails, state: await handle.query(stateQuery) };
    return { outcome, attempts, dead, history: await handle.fetchHistory(), workflowId, ended };
  });
}

const timersOf = (h: Awaited<ReturnType<typeof deliver>>['history']) =>
  h.events!.filter((e) => e.timerStartedEventAttributes).map((e) => Number(e.timerStartedEventAttributes!.startToFireTimeout!.seconds ?? 0) * 1000 + Math.round((e.timerStartedEventAttributes!.startToFireTimeout!.nanos ?? 0) / 1e6));

test('failed attempts are retried with doubling waits up to the cap, until one delivers; the history replays', async () => {
  const { outcome, attempts, dead, history, workflowId, ended } = await deliver(['fail', 'fail', 'fail', 'fail', 'deliver']);
  assert.equal(outcome, 'delivered');
  assert.equal(attempts.length, 5);
  assert.deepEqual(dead, []);
  assert.deepEqual(timersOf(history), [100, 200, 400, 400], 'waits double from the first, capped');
  assert.equal(ended.details, '**delivered** after 5 attempts.');
  assert.equal(ended.state.status, 'delivered');
  await Worker.runReplayHistory({ workflowsPath }, history, workflowId);
});

test('a delivery failing for its whole window is dead-lettered once, with no attempt after', async () => {
  const { outcome, attempts, dead, history, ended } = await deliver([], { retryForMs: 1500 });
  assert.equal(outcome, 'dead');
  assert.equal(ended.details, `**Dead** after ${attempts.length} attempts: the account can list and replay it.`);
  assert.equal(dead.length, 1);
  const waits = timersOf(history);
  assert.equal(attempts.length, waits.length + 1, 'an attempt before and after each wait, none after the dead letter');
  assert.ok(waits.length >= 1 && waits.reduce((a, b) => a + b, 0) <= 1500, `the waits (${waits.join(', ')} ms) stay inside the window`);
});

test('an attempt that finds the delivery ended (endpoint removed, or a newer generation) ends the workflow without a dead letter', async () => {
  const { outcome, attempts, dead } = await deliver(['fail', 'gone']);
  assert.equal(outcome, 'ended');
  assert.equal(attempts.length, 2);
  assert.deepEqual(dead, []);
});

test('while it waits to retry, a delivery tells operators which attempt comes next and when, and when it gives up', async () => {
  const env = testEnv();
  const args: WebhookDeliveryArgs = { deliveryId: `whd_${crypto.randomUUID()}`, generation: 1, firstRetryMs: 2000, maxRetryMs: 2000, retryForMs: 60_000 };
  let attempts = 0;
  const worker = await Worker.create({
    connection: env.nativeConnection, taskQueue: CONTROL_TASK_QUEUE, workflowsPath,
    activities: { webhookAttempt: async () => ({ done: ++attempts > 1, delivered: true }), webhookDeadLetter: async () => undefined },
  });
  await worker.runUntil(async () => {
    const handle = await env.client.workflow.start(webhookDeliveryWorkflow, { taskQueue: CONTROL_TASK_QUEUE, workflowId: webhookDeliveryWorkflowId(args.deliveryId, 1), args: [args] });
    // Two seconds between the failed first attempt and the second: time to read it there.
    let details = '';
    while (!details.startsWith('**Attempt 1 failed**')) {
      details = (await handle.query(workflowMetadataQuery)).currentDetails ?? '';
      assert.equal(attempts < 2 || details.startsWith('**Attempt 1 failed**'), true, `read before the retry: ${details}`);
    }
    const state = await handle.query(stateQuery);
    assert.deepEqual({ ...state, next_attempt_at: undefined, gives_up_at: undefined }, { object: 'webhook_delivery', delivery_id: args.deliveryId, generation: 1, status: 'waiting', attempt: 2, next_attempt_at: undefined, gives_up_at: undefined });
    assert.equal(details, `**Attempt 1 failed**; retry 2 at ${state.next_attempt_at}. Dead-lettered if still failing at ${state.gives_up_at}.`);
    assert.ok(Date.parse(state.next_attempt_at as string) > Date.now(), 'the retry is still to come');
    assert.equal(await handle.result(), 'delivered');
  });
});

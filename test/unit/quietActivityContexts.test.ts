import { test } from 'node:test';
import assert from 'node:assert/strict';
import { asyncLocalStorage as activityContexts, type Context } from '@temporalio/activity';
import type { ActivityExecuteInput, Next, ActivityInboundCallsInterceptor } from '@temporalio/worker';
import { quietActivityContexts } from '../../deploy/runWorker.ts';

/** Runs `body` as the worker runs an activity: inside the storage's `run`, through the interceptor. */
function runActivity(factory: ReturnType<typeof quietActivityContexts>, name: string, body: () => Promise<unknown>) {
  const context = { info: { activityType: name } } as unknown as Context;
  const inbound = factory(context).inbound as ActivityInboundCallsInterceptor;
  const next: Next<ActivityInboundCallsInterceptor, 'execute'> = async () => body();
  return activityContexts.run(context, () => inbound.execute!({} as ActivityExecuteInput, next));
}

const seen = () => (activityContexts.getStore() as { info?: { activityType: string } } | undefined)?.info?.activityType;

test('the activity Context storage is disabled once no activity runs, and not while one still does', async () => {
  const factory = quietActivityContexts();
  const gate = () => { let open!: () => void; const opened = new Promise<void>((r) => (open = r)); return { open, opened }; };
  const secondHeld = gate();
  const probeHeld = gate();
  // Something that set a Context before and reads it again after the activities end: it
  // still finds it while the storage is on, and nothing once it is off.
  const probe = activityContexts.run({ info: { activityType: 'probe' } } as unknown as Context, async () => {
    await probeHeld.opened;
    return seen();
  });
  let secondSawAfterFirstEnded: string | undefined;
  const first = runActivity(factory, 'first', async () => seen());
  const second = runActivity(factory, 'second', async () => {
    await secondHeld.opened;
    secondSawAfterFirstEnded = seen();
    return seen();
  });
  assert.equal(await first, 'first');
  // The first ended while the second still runs: the second's Context must still be there.
  secondHeld.open();
  assert.equal(await second, 'second');
  assert.equal(secondSawAfterFirstEnded, 'second');
  probeHeld.open();
  assert.equal(await probe, undefined, 'the storage stayed on with no activity running');
  // A later activity enables it again and reads its own Context.
  assert.equal(await runActivity(factory, 'third', async () => { await Promise.resolve(); return seen(); }), 'third');
});

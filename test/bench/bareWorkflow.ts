import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';

/**
 * The baseline of bench:runs: a bare workflow shaped like runWorkflow, its activities of
 * the same kinds in the same order: two local (schedule, slot), one normal activity on
 * another task queue (the execution), one local (settlement).
 */
type Steps = { step(n: number): Promise<number> };
const local = proxyLocalActivities<Steps>({ startToCloseTimeout: '1 minute' });
const remote = proxyActivities<Steps>({ startToCloseTimeout: '1 minute', taskQueue: 'bench-bare-compute' });

export async function bareWorkflow(): Promise<number> {
  let x = await local.step(0);
  x += await local.step(1);
  x += await remote.step(2);
  return x + (await local.step(3));
}

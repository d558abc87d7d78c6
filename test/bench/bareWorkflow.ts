import { proxyActivities } from '@temporalio/workflow';

/** The baseline of bench:runs: a bare workflow with as many activities as runWorkflow has. */
const a = proxyActivities<{ step(n: number): Promise<number> }>({ startToCloseTimeout: '1 minute' });

export async function bareWorkflow(): Promise<number> {
  let x = 0;
  for (let i = 0; i < 4; i++) x += await a.step(i);
  return x;
}

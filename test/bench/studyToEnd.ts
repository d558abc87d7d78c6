import type { createHttpClient } from './httpClient.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A study through the API as a client runs one: plans it (refusing a plan that is not
 * ready), opens it, and reads it every `pollMs` until it has completed. Returns the study
 * as last read, and how long each read took.
 */
export async function studyToEnd(h: ReturnType<typeof createHttpClient>, body: Record<string, unknown>, pollMs: number): Promise<{ id: string; done: any; reads: number[] }> {
  const plan = await h.json('POST', '/experiment-plans', body);
  if (plan.status !== 'ready') throw new Error(`study plan blocked: ${JSON.stringify(plan.findings)}`);
  const e = await h.json('POST', '/experiments', { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 }, { 'Idempotency-Key': crypto.randomUUID() });
  const reads: number[] = [];
  for (;;) {
    const r0 = performance.now();
    const done = await h.json('GET', `/experiments/${e.id}`);
    reads.push(performance.now() - r0);
    if (done.completed_at) return { id: e.id as string, done, reads };
    await sleep(pollMs);
  }
}

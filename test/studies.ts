import assert from 'node:assert/strict';
import { call, until } from './helpers.ts';

/** Plans a study, expects it ready, and opens it: its plan and the study as accepted. */
export async function openStudy(key: string, body: Record<string, unknown>): Promise<{ plan: any; study: any }> {
  const plan = await call('POST', '/experiment-plans', { key, body });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  const res = await call('POST', '/experiments', { key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(res.status, 200, res.text);
  return { plan: plan.body, study: res.body };
}

/** The study once it has completed, with its runs. */
export async function waitForStudy(key: string, id: string, ms = 400_000): Promise<any> {
  return until(ms, async () => {
    const e = (await call('GET', `/experiments/${id}?include_runs=true`, { key })).body;
    return e.completed_at ? e : undefined;
  });
}

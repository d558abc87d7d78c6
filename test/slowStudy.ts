import assert from 'node:assert/strict';
import path from 'node:path';
import { call, workspaceOfLab } from './helpers.ts';
import { REPO_ROOT } from '../deploy/local/paths.ts';

/**
 * A Sobol' study of the slow lab (test/fixtures/labs/slow-lab), started: each run sleeps
 * for its `busy_seconds`, drawn from `busy`, so the study is seen running for as long as
 * a test needs. Returns the study's id.
 */
export async function startSlowStudy(key: string, o: { title: string; busy: [number, number]; maxRuntimeSeconds: number }): Promise<string> {
  const ws = await workspaceOfLab(key, o.title, path.join(REPO_ROOT, 'test/fixtures/labs/slow-lab'));
  const plan = await call('POST', '/experiment-plans', { key, body: {
    name: o.title, lab: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, compute_profile_id: 'cpu-small', max_runtime_seconds: o.maxRuntimeSeconds, inputs: {} },
    sensitivity: { parameters: [{ input: 'busy_seconds', low: o.busy[0], high: o.busy[1] }], outputs: [{ output: 'elapsed', summary: 'final' }], method: 'sobol', base_sample: 2, seed: 7 },
  } });
  assert.equal(plan.body.status, 'ready', plan.text);
  const study = await call('POST', '/experiments', { key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(study.status, 200, study.text);
  return study.body.id;
}

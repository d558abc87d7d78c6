import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { call, closeTestDb, fileBytes, newAccount, until, workspaceOfLab } from '../helpers.ts';
import { listedRuns } from '../studyRuns.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

after(closeTestDb);

/** The study's `design.csv`: its listed file, and its rows (checked against the file's recorded digest). */
async function designOf(key: string, e: any): Promise<{ file: any; rows: Array<Record<string, string>> }> {
  const file = e.artifacts.find((a: any) => a.file_name === 'design.csv');
  assert.ok(file, `design.csv is among the study's files: ${JSON.stringify(e.artifacts)}`);
  const bytes = await fileBytes(key, file.download_url);
  assert.equal(createHash('sha256').update(bytes).digest('hex'), file.sha256, 'design.csv re-hashes to its recorded sha256');
  return { file, rows: parse(bytes, { columns: true }) };
}

test('a run detached from a finished question study leaves its design.csv: the file is written again without it, in place of the old one, the study\'s other files kept', { timeout: 300_000 }, async () => {
  const owner = await newAccount({ usd: 20 });
  const growth = await workspaceOfLab(owner.key, 'Microbial growth', path.join(REPO_ROOT, 'labs/microbial-growth'));
  const plan = await call('POST', '/experiment-plans', { key: owner.key, body: {
    name: 'Detach from a finished study', lab: { workspace_id: growth.workspace_id, revision_id: growth.revision_id, max_runtime_seconds: 60, inputs: {} },
    sensitivity: { parameters: [{ input: 'growth_rate', low: 0.2, high: 0.6 }], outputs: [{ output: 'biomass', summary: 'max' }], method: 'morris', base_sample: 4 },
  } });
  assert.equal(plan.status, 200, plan.text);
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  const opened = await call('POST', '/experiments', { key: owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(opened.status, 200, opened.text);
  const done = await until(240_000, async () => {
    const e = (await call('GET', `/experiments/${opened.body.id}`, { key: owner.key })).body;
    return e.completed_at ? e : undefined;
  });
  const before = await designOf(owner.key, done);
  const runs = await listedRuns(owner.key, done.id);
  assert.deepEqual(before.rows.map((r) => r.run_id), runs.map((r) => r.run_id), 'at first, one row per run');
  const detached = runs[1]!.run_id;

  const patched = await call('PATCH', `/experiments/${done.id}`, { key: owner.key, body: { detach_run_ids: [detached] } });
  assert.equal(patched.status, 200, patched.text);
  const e = (await call('GET', `/experiments/${done.id}`, { key: owner.key })).body;
  const after = await designOf(owner.key, e);
  assert.notEqual(after.file.sha256, before.file.sha256, 'design.csv is another file now');
  assert.deepEqual(after.rows.map((r) => r.run_id), runs.map((r) => r.run_id).filter((id) => id !== detached), 'every run but the detached one, in start order');
  assert.deepEqual(after.rows, before.rows.filter((r) => r.run_id !== detached), 'the other rows as they were');
  assert.deepEqual(e.artifacts.map((a: any) => a.file_name), done.artifacts.map((a: any) => a.file_name), 'the same files, in the same order');
  for (const a of e.artifacts.filter((x: any) => x.file_name !== 'design.csv')) {
    assert.equal(a.sha256, done.artifacts.find((x: any) => x.file_name === a.file_name).sha256, `${a.file_name} is unchanged`);
  }
});

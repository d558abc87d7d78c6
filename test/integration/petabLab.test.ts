import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { call, closeTestDb, newAccount, testSandbox, waitForRun } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { runEngine } from '../../activities/petab/engine.ts';
import { petabLabFiles, PROBLEM_DIR, type PetabLabSource } from '../../api/petab/labFiles.ts';

// The lab a PEtab problem becomes, taken through workspaces and a managed run like any
// lab: its environment is resolved from the toolkit's pins and built once, and the
// runtime's SBML support simulates the problem's model as the engine does.

after(closeTestDb);
const NAME = 'Boehm_JProteomeRes2014';
const DIR = path.join(REPO_ROOT, 'test/fixtures/petab/benchmark', NAME);

test('Boehm\'s lab: the runtime accepts it, a run at the PEtab nominal parameters completes in the toolkit\'s environment, and its observables at the last measurement are the engine\'s simulations', { skip: !process.env.SILICO_PETAB_PYTHON && 'the PEtab toolkit is set up by npm test' }, async () => {
  const scratch = await mkdtemp(path.join(tmpdir(), 'silico-petab-lab-'));
  const messages: Array<Record<string, any>> = [];
  try {
    const outcome = await runEngine(testSandbox(), {
      python: process.env.SILICO_PETAB_PYTHON!, problemDir: DIR, yaml: `${NAME}.yaml`, scratch, vcpus: 1, wallSeconds: 120,
      limits: { memoryBytes: 4 * 2 ** 30, cpuSeconds: 120, processes: 64, openFiles: 256, fileSizeBytes: 1 << 30, tmpBytes: 256 << 20, scratchBytes: 256 << 20 },
      request: { command: 'evaluate', sets: [{}], simulations: true }, onMessage: (m) => { messages.push(m); },
    });
    assert.equal(outcome.error, null, JSON.stringify(outcome.error));
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const problem = messages.find((m) => m.type === 'problem') as PetabLabSource['problem'];
  // The problem's files (the fixture's SOURCE.md, which names where they came from, is not one).
  const files = await Promise.all((await readdir(DIR)).filter((f) => f !== 'SOURCE.md').map(async (f) => ({ path: f, bytes: await readFile(path.join(DIR, f)) })));
  const lab = petabLabFiles({ title: NAME, problem, files, sbml: `model_${NAME}.xml` });
  assert.ok(lab.some((f) => f.path === `${PROBLEM_DIR}/${NAME}.yaml`), 'the problem is kept');

  const { key } = await newAccount({ usd: 5 });
  const ws = (await call('POST', '/workspaces', { key, body: { title: NAME } })).body;
  const change = await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key, body: { base_revision_id: ws.head_revision_id, operations: lab.map((f) => ({ kind: 'file_put', path: f.path, content: f.bytes.toString('utf8') })) } });
  assert.equal(change.status, 200, change.text);
  assert.equal(change.body.status, 'ready', JSON.stringify(change.body.findings));
  const rev = await call('POST', '/workspace-revisions', { key, body: { plan_id: change.body.plan_id, plan_sha256: change.body.plan_sha256 } });
  assert.equal(rev.status, 200, rev.text);

  // The PEtab nominal values (linear) of the model's estimated parameters.
  const table = parseCsv(await readFile(path.join(DIR, `parameters_${NAME}.tsv`), 'utf8'), { delimiter: '\t', columns: true }) as Array<Record<string, string>>;
  const inputs = Object.fromEntries(table.filter((r) => r.parameterId! in problem.model.parameters).map((r) => [r.parameterId!, Number(r.nominalValue)]));
  const plan = await call('POST', '/run-plans', { key, body: { workspace_id: ws.workspace_id, revision_id: rev.body.revision_id, inputs, seed: 1, max_runtime_seconds: 300 } });
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  assert.equal(plan.body.environment.python, '3.12');
  const run = await call('POST', '/runs', { key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(run.status, 200, run.text);
  // A cold build of the toolkit's lock (tellurium, pyPESTO) downloads hundreds of MB first.
  const done = await waitForRun(key, run.body.id, 600_000);
  assert.equal(done.status, 'completed', JSON.stringify(done.error ?? done));
  const out = (await call('GET', `/runs/${run.body.id}/results`, { key })).body.outputs as Record<string, number>;
  assert.deepEqual(Object.keys(out).sort(), [...problem.model.observed].sort());

  // The observable formulas (observables_Boehm_JProteomeRes2014.tsv) of the lab's final values.
  const { STAT5A, STAT5B, pApA, pApB, pBpB, specC17 } = out as Record<string, number>;
  const observed: Record<string, number> = {
    pSTAT5A_rel: (100 * pApB! + 200 * pApA! * specC17!) / (pApB! + STAT5A! * specC17! + 2 * pApA! * specC17!),
    pSTAT5B_rel: -(100 * pApB! - 200 * pBpB! * (specC17! - 1)) / ((STAT5B! * (specC17! - 1) - pApB!) + 2 * pBpB! * (specC17! - 1)),
    rSTAT5A_rel: (100 * pApB! + 100 * STAT5A! * specC17! + 200 * pApA! * specC17!) / (2 * pApB! + STAT5A! * specC17! + 2 * pApA! * specC17! - STAT5B! * (specC17! - 1) - 2 * pBpB! * (specC17! - 1)),
  };
  const sims = parseCsv(messages.find((m) => m.type === 'evaluation')!.simulations, { delimiter: '\t', columns: true }) as Array<Record<string, string>>;
  for (const [id, value] of Object.entries(observed)) {
    const at = sims.find((r) => r.observableId === id && Number(r.time) === problem.max_time)!;
    assert.ok(Math.abs(value - Number(at.simulation)) <= 1e-3 * Math.abs(Number(at.simulation)), `${id} at t=${problem.max_time}: the lab's ${value}, the engine's ${at.simulation}`);
  }
});

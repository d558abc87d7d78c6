import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeTestDb, downloadArtifact, newAccount } from '../helpers.ts';
import { mcpClients } from '../mcpClients.ts';
import { isPlaceholder } from '../../api/tools/tool.ts';
import { sha256Hex } from '../../storage/digest.ts';

// The authoring-labs skill's template lab, as an agent gets it (skill_get over MCP, each
// file by path), put into a new workspace by following the service's next steps, and run:
// the template cannot rot without this file failing.

after(closeTestDb);
const { http: mcpClient } = mcpClients();

/** A tool's structured answer; a refusal fails the test with its envelope. */
async function tool(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(!res.isError, `${name}: ${JSON.stringify(res.structuredContent)}`);
  return res.structuredContent;
}

/** The answer's next step to `name`: its arguments, the placeholders among them named. */
function stepTo(answer: any, name: string): { arguments: Record<string, any>; placeholders: string[] } {
  const step = answer.next_actions.find((a: any) => a.tool === name);
  assert.ok(step, `a next step to ${name} among ${answer.next_actions.map((a: any) => a.tool).join(', ')}`);
  const placeholders: string[] = [];
  const walk = (v: unknown, at: string) => {
    if (isPlaceholder(v)) placeholders.push(at);
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, at ? `${at}.${k}` : k);
  };
  walk(step.arguments, '');
  return { arguments: step.arguments, placeholders };
}

/** The logistic closed form the template's model computes. */
const logistic = (t: number, n0: number, r: number, k: number) => k / (1 + ((k - n0) / n0) * Math.exp(-r * t));

/** The points of a run's `population` series, from its CSV artifact. */
async function seriesOf(client: Client, key: string, runId: string): Promise<{ final: number; points: Array<[number, number]> }> {
  const results = await tool(client, 'run_results', { run_id: runId });
  const csv = results.artifacts.find((a: any) => a.file_name === 'population.csv');
  assert.ok(csv, JSON.stringify(results.artifacts.map((a: any) => a.file_name)));
  const [header, ...rows] = (await downloadArtifact(key, runId, csv.artifact_id)).toString('utf8').trim().split('\n');
  assert.equal(header, 't,population');
  return { final: results.outputs.population, points: rows.map((r) => r.split(',').map(Number) as [number, number]) };
}

/** Follows a run plan's next step to its end: run_create with a fresh key, run_get until it is over. */
async function runToEnd(client: Client, plan: any): Promise<any> {
  const create = stepTo(plan, 'run_create');
  assert.deepEqual(create.placeholders, ['idempotency_key']);
  let run = await tool(client, 'run_create', { ...create.arguments, idempotency_key: crypto.randomUUID() });
  const deadline = Date.now() + 120_000;
  while (!['completed', 'failed', 'cancelled', 'timed_out'].includes(run.status)) {
    assert.ok(Date.now() < deadline, `run stayed ${run.status}`);
    await new Promise((r) => setTimeout(r, 300));
    run = await tool(client, 'run_get', { run_id: run.id });
  }
  assert.equal(run.status, 'completed', JSON.stringify(run.error));
  return run;
}

test('the authoring skill\'s template lab, read from the service, is written into a new workspace by its next steps, judged, and runs to its closed form, inputs and parameter taking effect', { timeout: 300_000 }, async () => {
  const { key } = await newAccount({ usd: 5 });
  const client = await mcpClient(key);

  // The skill, and every file of its template, each verified against its published digest.
  const skill = await tool(client, 'skill_get', { name: 'authoring-labs' });
  assert.ok(Buffer.byteLength(skill.content) <= 12 * 1024, `SKILL.md is read whole by an agent: ${Buffer.byteLength(skill.content)} bytes`);
  const files = new Map<string, string>();
  for (const f of skill.skill.files.filter((x: any) => x.path.startsWith('template/'))) {
    const got = await tool(client, 'skill_get', { name: 'authoring-labs', path: f.path });
    assert.equal(sha256Hex(got.content), f.sha256, f.path);
    files.set(f.path.slice('template/'.length), got.content);
  }
  assert.deepEqual([...files.keys()].sort(), ['lab.yaml', 'models/logistic/model.yaml', 'models/logistic/src/logistic.py', 'models/logistic/tests/test_logistic.py']);
  // What SKILL.md shows of the template is the template's own text, file by file.
  for (const [p, lang] of [['lab.yaml', 'yaml'], ['models/logistic/model.yaml', 'yaml'], ['models/logistic/src/logistic.py', 'python']] as const) {
    assert.ok(skill.content.includes(`(template/${p})\n\`\`\`${lang}\n${files.get(p)}\`\`\``), `SKILL.md quotes template/${p} as it is`);
  }

  // Its known answers pass, as the labs' pytest runs them.
  const dir = await mkdtemp(path.join(tmpdir(), 'authoring-template-'));
  for (const [p, text] of files) {
    await mkdir(path.dirname(path.join(dir, p)), { recursive: true });
    await writeFile(path.join(dir, p), text);
  }
  const pytest = await promisify(execFile)(process.env.SILICO_PYTHON!, ['-m', 'pytest', '-q', '-p', 'no:cacheprovider', dir], { env: { PATH: process.env.PATH ?? '', PYTHONDONTWRITEBYTECODE: '1' } });
  assert.match(pytest.stdout, /2 passed/);

  // A new workspace has no lab yet: its next steps are the skill and a change plan.
  const ws = await tool(client, 'workspace_create', { title: 'Logistic growth' });
  assert.deepEqual(stepTo(ws, 'skill_get').arguments, { name: 'authoring-labs' });
  const propose = stepTo(ws, 'workspace_change_prepare');
  assert.deepEqual([propose.arguments.workspace_id, propose.arguments.base_revision_id], [ws.workspace_id, ws.head_revision_id]);
  assert.deepEqual(propose.placeholders, ['operations.0.content']);
  const empty = await tool(client, 'workspace_get', { workspace_id: ws.workspace_id });
  assert.deepEqual(empty.next_actions.map((a: any) => a.tool), ['skill_get', 'workspace_change_prepare']);
  const put = (only: string[]) => only.map((p) => ({ kind: 'file_put', path: p, content: files.get(p)! }));
  const prepare = (operations: unknown[]) => tool(client, 'workspace_change_prepare', { ...propose.arguments, operations });

  // A tree without lab.yaml says so; a model whose module is not there yet is named.
  const notes = await prepare([{ kind: 'file_put', path: 'notes.md', content: 'to do' }]);
  assert.deepEqual(notes.findings.map((f: any) => [f.severity, f.code]), [['info', 'manifest_absent']]);
  assert.ok(stepTo(notes, 'skill_get'));
  const noModule = await prepare(put(['lab.yaml', 'models/logistic/model.yaml']));
  assert.equal(noModule.status, 'ready', 'a draft is kept');
  assert.deepEqual(noModule.findings.map((f: any) => [f.severity, f.code, f.path]), [['warning', 'entrypoint_missing', 'models/logistic/model.yaml#/biosim/entrypoint']]);
  assert.match(noModule.findings[0].message, /^models\/logistic\/src\/logistic\.py is not in the tree: .* src\.logistic:LogisticGrowth/);

  // The whole template: the runtime accepts it, and applying it leads to a run plan of the new revision.
  const plan = await prepare(put([...files.keys()]));
  assert.deepEqual(plan.findings.map((f: any) => [f.severity, f.code]), [['info', 'runtime_accepts']], JSON.stringify(plan.findings));
  const apply = stepTo(plan, 'workspace_change_apply');
  assert.deepEqual(apply.placeholders, []);
  const rev = await tool(client, 'workspace_change_apply', apply.arguments);
  const runStep = stepTo(rev, 'run_prepare');
  assert.deepEqual(runStep.arguments, { workspace_id: ws.workspace_id, revision_id: rev.revision_id }, 'no input is required');

  // A run with one input changed: the series is the closed form at that rate, the lab's carrying capacity and the model's N0.
  const runAt = async (revisionArgs: Record<string, unknown>) => {
    const runPlan = await tool(client, 'run_prepare', { ...revisionArgs, inputs: { growth_rate: 0.8 }, max_runtime_seconds: 120 });
    assert.equal(runPlan.status, 'ready', JSON.stringify(runPlan.findings));
    return seriesOf(client, key, (await runToEnd(client, runPlan)).id);
  };
  const first = await runAt(runStep.arguments);
  assert.equal(first.points.length, 40, 'one point per communication step, t = 0.5 … 20');
  first.points.forEach(([t, n], i) => {
    assert.ok(Math.abs(t - 0.5 * (i + 1)) < 1e-12, `t = ${t}`);
    assert.ok(Math.abs(n - logistic(t, 10, 0.8, 1000)) <= 1e-9 * n, `N(${t}) = ${n}`);
  });
  assert.ok(Math.abs(first.final - logistic(20, 10, 0.8, 1000)) <= 1e-9 * first.final);
  assert.ok(Math.abs(first.points[4]![1] - logistic(2.5, 10, 0.5, 1000)) > 1, 'the input, not the model\'s default rate');

  // The parameter changed in lab.yaml, through a change plan on the new head: the plateau follows it.
  const edit = stepTo(rev, 'workspace_change_prepare');
  assert.equal(edit.arguments.base_revision_id, rev.revision_id);
  const halved = files.get('lab.yaml')!.replace('carrying_capacity: 1000.0', 'carrying_capacity: 500.0');
  assert.notEqual(halved, files.get('lab.yaml'));
  const change = await tool(client, 'workspace_change_prepare', { ...edit.arguments, operations: [{ kind: 'file_put', path: 'lab.yaml', content: halved }] });
  const second = await tool(client, 'workspace_change_apply', stepTo(change, 'workspace_change_apply').arguments);
  const again = await runAt(stepTo(second, 'run_prepare').arguments);
  again.points.forEach(([t, n]) => assert.ok(Math.abs(n - logistic(t, 10, 0.8, 500)) <= 1e-9 * n, `N(${t}) = ${n} with K = 500`));
  assert.ok(Math.abs(again.final - 500) < 0.01 && Math.abs(first.final - 1000) < 0.02, `${again.final} and ${first.final}: each run's plateau is its lab's K`);
});

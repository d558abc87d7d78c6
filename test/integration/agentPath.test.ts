import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { closeTestDb, newAccount } from '../helpers.ts';
import { mcpClients } from '../mcpClients.ts';
import { MAX_ANSWER_BYTES, MAX_TOOL_LIST_BYTES } from '../../api/mcp/catalog.ts';
import { isPlaceholder } from '../../api/tools/tool.ts';

/**
 * An agent's first session, knowing only the MCP endpoint and a key: it learns everything
 * else from the service's answers. Each call it makes is a next step an answer offered,
 * with the arguments that step carried; it adds only the values the step leaves to it
 * (placeholders) and what a skill taught it. Every answer must fit an agent's context.
 */

after(closeTestDb);
const { http } = mcpClients();

type Answer = Record<string, any>;

/** Whether a step's argument is, or holds, a value left to the agent. */
const leftToAgent = (value: unknown): boolean => isPlaceholder(value) || (Boolean(value) && typeof value === 'object' && Object.values(value as object).some(leftToAgent));
type Step = { tool: string; description: string; arguments: Record<string, unknown> };

let agent: Client;
const calls: string[] = [];

async function callTool(name: string, args: Record<string, unknown>): Promise<Answer> {
  calls.push(name);
  const res = await agent.callTool({ name, arguments: args });
  const body = res.structuredContent as Answer;
  const bytes = Buffer.byteLength(JSON.stringify(body));
  assert.ok(bytes <= MAX_ANSWER_BYTES, `${name} answered ${bytes} bytes`);
  assert.ok(!res.isError, `${name}: ${JSON.stringify(body).slice(0, 1500)}`);
  return body;
}

/**
 * Takes the next step to `tool` that `answer` offers: its arguments as given, each
 * placeholder filled with what the agent chose (an idempotency key it makes itself), and
 * `extra` only for arguments the step left out.
 */
async function follow(answer: Answer, tool: string, chosen: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Promise<Answer> {
  const step = (answer.next_actions as Step[]).find((s) => s.tool === tool);
  assert.ok(step, `${tool} is a next step; offered: ${JSON.stringify(answer.next_actions.map((s: Step) => s.tool))}`);
  const args: Record<string, unknown> = { ...step.arguments };
  for (const [name, value] of Object.entries(args)) {
    if (!leftToAgent(value)) continue;
    if (name === 'idempotency_key') args[name] = crypto.randomUUID();
    else {
      assert.ok(name in chosen, `${tool}'s ${name} is the agent's to choose (${String(value)})`);
      args[name] = chosen[name];
    }
  }
  for (const name of Object.keys(chosen)) assert.ok(leftToAgent(step.arguments[name]), `${tool}'s ${name} was left to the agent`);
  for (const [name, value] of Object.entries(extra)) {
    assert.ok(!(name in args), `${tool}'s ${name} was given by the step`);
    args[name] = value;
  }
  return callTool(tool, args);
}

/** Repeats a read the answer offers as its next step until `done` holds of it. */
async function until(answer: Answer, tool: string, done: (a: Answer) => boolean, what: string): Promise<Answer> {
  const deadline = Date.now() + 180_000;
  let current = await follow(answer, tool);
  while (!done(current)) {
    assert.ok(Date.now() < deadline, `${what}: still ${current.status}`);
    await new Promise((r) => setTimeout(r, 250));
    current = await callTool(tool, (answer.next_actions as Step[]).find((s) => s.tool === tool)!.arguments);
  }
  return current;
}

before(async () => {
  const { key } = await newAccount({ usd: 5 });
  agent = await http(key);
});

test('an agent with only the endpoint and a key authors, runs, studies and publishes a lab, led by answers and a skill', async () => {
  // Discover: what the server says it is, and every tool within the budget.
  assert.match(agent.getInstructions() ?? '', /authoring-labs/);
  const { tools } = await agent.listTools();
  assert.ok(Buffer.byteLength(JSON.stringify({ tools })) <= MAX_TOOL_LIST_BYTES);

  // Learn the lab format from the skill, and take its template as it stands.
  const skills = await callTool('skill_list', {});
  assert.ok(skills.items.some((s: Answer) => s.name === 'authoring-labs'));
  const skill = await callTool('skill_get', { name: 'authoring-labs' });
  const templatePaths = (skill.skill.files as Array<{ path: string }>).map((f) => f.path).filter((p) => p.startsWith('template/'));
  assert.ok(templatePaths.includes('template/lab.yaml'), JSON.stringify(templatePaths));
  const template: Record<string, string> = {};
  for (const path of templatePaths) template[path.slice('template/'.length)] = (await callTool('skill_get', { name: 'authoring-labs', path })).content;

  // Author: an empty workspace points to the skill and to its first change.
  const created = await callTool('workspace_create', { title: 'Logistic growth by an agent' });
  assert.ok(created.next_actions.some((s: Step) => s.tool === 'skill_get' && s.arguments.name === 'authoring-labs'), 'an empty workspace points to the authoring skill');
  const operations = Object.entries(template).map(([path, content]) => ({ kind: 'file_put', path, content }));
  const change = await follow(created, 'workspace_change_prepare', { operations });
  assert.equal(change.status, 'ready', JSON.stringify(change.findings));
  assert.ok(!change.findings.some((f: Answer) => f.severity !== 'info'), `the template is accepted as it stands: ${JSON.stringify(change.findings)}`);
  const revision = await follow(change, 'workspace_change_apply');

  // Run it with one input changed.
  const plan = await follow(revision, 'run_prepare', {}, { inputs: { growth_rate: 0.8 } });
  assert.equal(plan.status, 'ready', JSON.stringify(plan.findings));
  const run = await follow(plan, 'run_create');
  const ended = await until(run, 'run_get', (r) => ['completed', 'failed', 'cancelled', 'timed_out'].includes(r.status), 'the run');
  assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
  const results = await follow(ended, 'run_results');
  // The template's closed form: N(20) = K / (1 + (K - N0)/N0 e^(-r 20)), K = 1000, N0 = 10, r = 0.8.
  const expected = 1000 / (1 + (1000 - 10) / 10 * Math.exp(-0.8 * 20));
  const population = results.outputs.population;
  const final = typeof population === 'number' ? population : population?.final ?? population?.at?.(-1);
  assert.ok(Math.abs(Number(final) - expected) < 1e-6 * expected, `population at the end: ${JSON.stringify(population)}, expected ${expected}`);

  // A small Sobol' study of it: the plan says what sample would give stable indices.
  const sensitivity = { parameters: [{ input: 'growth_rate', low: 0.2, high: 1.0 }, { input: 'initial_population', low: 5, high: 50 }], outputs: [{ output: 'population', summary: 'final' }], method: 'sobol', base_sample: 2 };
  const studyPlan = await follow(results, 'experiment_prepare', { name: 'Growth sensitivity', sensitivity });
  assert.equal(studyPlan.status, 'ready', JSON.stringify(studyPlan.findings));
  const small = [...studyPlan.findings, ...studyPlan.arms.flatMap((a: Answer) => a.findings ?? [])].find((f: Answer) => f.path === 'sensitivity.base_sample');
  assert.ok(small, `a finding on the sample size: ${JSON.stringify(studyPlan.findings)}`);
  assert.match(small.message, /\d{2,}/, 'it names the sample that would give the target width');
  const study = await follow(studyPlan, 'experiment_create');
  assert.ok(study.arms.every((a: Answer) => !('runs' in a)), 'an agent\'s study answer leaves the runs to experiment_run_list');
  const studied = await until(study, 'experiment_get', (e) => e.status !== 'running', 'the study');
  assert.equal(studied.status, 'completed');
  assert.equal(studied.run_totals.completed, 2 * (2 + 2));
  assert.ok(studied.analysis, 'the study analysed its runs');
  const runsOfStudy = await follow(studied, 'experiment_run_list');
  assert.equal(runsOfStudy.items.length, 8, 'every run of the study, on one page');
  assert.ok(runsOfStudy.items.every((r: Answer) => r.status === 'completed' && typeof r.params?.growth_rate === 'number'), 'each with the parameter set it was given');

  // Publish it, and follow the publication to the Hub.
  const release = await follow(results, 'publish_prepare', { version: '1.0.0' });
  assert.equal(release.status, 'ready', JSON.stringify(release.findings));
  assert.ok(JSON.stringify(release).includes('visibility'), 'the plan states the release\'s visibility');
  const publication = await follow(release, 'publish_execute');
  const published = await until(publication, 'publication_get', (p) => p.status !== 'publishing', 'the publication');
  assert.equal(published.status, 'published', JSON.stringify(published));
  const onHub = await follow(published, 'hub_inspect');
  assert.match(JSON.stringify(onHub), /@1\.0\.0/);
  assert.ok(calls.length <= 60, `${calls.length} calls`);
});

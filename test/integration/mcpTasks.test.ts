import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, type Task } from '@modelcontextprotocol/sdk/types.js';
import path from 'node:path';
import { withoutRequestId, call, closeTestDb, newAccount, publishFixtureLab, spawnApi, workspaceOfLab } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { mcpClients, mcpRefusal as refusal } from '../mcpClients.ts';

// MCP tasks with the official TypeScript SDK as the client, over its real transport and
// the real stack: long work asked for as a task answers a task at once, is followed and
// read through tasks/get and tasks/result (through either api replica), is cancelled
// through tasks/cancel, and is the account's own.

after(closeTestDb);
const { http: client, stdio: stdioClient } = mcpClients();
let replica: Awaited<ReturnType<typeof spawnApi>>;
after(async () => {
  await replica?.stop();
});

const SIR = 'platform/sir-epidemic@1.0.0';

/** Starts `tool` as a task; resolves with the task it answered. */
async function startTask(c: Client, name: string, args: Record<string, unknown>, ttl = 600_000): Promise<Task> {
  const res = await c.request({ method: 'tools/call', params: { name, arguments: args, task: { ttl } } }, CreateTaskResultSchema);
  return res.task;
}

/** Polls tasks/get until the task ends; resolves with every state it reported. */
async function follow(c: Client, taskId: string): Promise<Task[]> {
  const seen: Task[] = [];
  const deadline = Date.now() + 120_000;
  for (;;) {
    const t = await c.experimental.tasks.getTask(taskId);
    seen.push(t);
    if (['completed', 'failed', 'cancelled'].includes(t.status)) return seen;
    assert.ok(Date.now() < deadline, `task ${taskId} ended (last: ${t.status} ${t.statusMessage})`);
    await new Promise((r) => setTimeout(r, t.pollInterval ?? 500));
  }
}

let owner: Awaited<ReturnType<typeof newAccount>>;
let other: Awaited<ReturnType<typeof newAccount>>;
before(async () => {
  [owner, other] = await Promise.all([newAccount({ usd: 20 }), newAccount({ usd: 5 })]);
  replica = await spawnApi();
});

test('the long-work tools declare task support and the server the tasks capability; others do not', async () => {
  const c = await client(owner.key);
  const { tools } = await c.listTools();
  const tasked = tools.filter((t) => t.execution?.taskSupport === 'optional').map((t) => t.name).sort();
  assert.deepEqual(tasked, ['biology_fetch', 'experiment_create', 'hosted_invocation_execute', 'hosting_execute', 'publish_execute', 'run_create']);
  assert.ok(c.getServerCapabilities()?.tasks?.requests?.tools?.call, 'task-augmented tools/call is offered');
  assert.ok(c.getServerCapabilities()?.tasks?.cancel && c.getServerCapabilities()?.tasks?.list);
  const err = await refusal(c.request({ method: 'tools/call', params: { name: 'run_get', arguments: { run_id: crypto.randomUUID() }, task: {} } }, CreateTaskResultSchema));
  assert.equal(err.code, ErrorCode.MethodNotFound);
});

test('a task-augmented run_create answers a task at once; tasks/get (through either replica) shows its progress to completed; tasks/result is the run as REST reads it, with its results as REST answers them', async () => {
  const c = await client(owner.key);
  const elsewhere = await client(owner.key, replica.base);
  const task = await startTask(c, 'run_create', { ref: SIR, inputs: {}, idempotency_key: crypto.randomUUID() });
  assert.equal(task.status, 'working');
  assert.equal(task.ttl, 600_000);
  assert.match(task.statusMessage ?? '', /^Run [0-9a-f-]{36} is (queued|running)/);
  const runId = /^Run ([0-9a-f-]{36})/.exec(task.statusMessage!)![1]!;
  // The other replica answers for a task it never saw created: the state is in Postgres.
  const states = await follow(elsewhere, task.taskId);
  assert.equal(states.at(-1)!.status, 'completed', JSON.stringify(states.at(-1)));
  assert.ok(states.every((s, i) => i === states.length - 1 || s.status === 'working'), 'working until it ends');
  assert.ok(states.every((s) => s.taskId === task.taskId && s.createdAt === task.createdAt));

  const result = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  assert.ok(!result.isError);
  const rest = await call('GET', `/runs/${runId}`, { key: owner.key });
  assert.deepEqual(withoutRequestId(result.structuredContent as Record<string, any>), withoutRequestId(rest.body), 'the run record, as GET /v1/runs/{id} says');
  assert.equal((result.structuredContent as Record<string, any>).status, 'completed');
  const embedded = (result.content as Array<{ type: string; resource?: { uri: string; text: string } }>).find((p) => p.type === 'resource')!;
  assert.equal(embedded.resource!.uri, `silico://runs/${runId}/results`);
  const results = await call('GET', `/runs/${runId}/results`, { key: owner.key });
  assert.deepEqual(withoutRequestId(JSON.parse(embedded.resource!.text)), withoutRequestId(results.body), 'its results, as GET /v1/runs/{id}/results says');
  assert.ok(results.body.artifacts.length > 0);
});

test('callToolStream, the SDK\'s own way of calling a task tool, ends with a result valid against run_create\'s output schema', async () => {
  const c = await client(owner.key);
  await c.listTools();
  const kinds: string[] = [];
  let last: Record<string, any> | undefined;
  for await (const m of c.experimental.tasks.callToolStream({ name: 'run_create', arguments: { ref: SIR, inputs: {}, idempotency_key: crypto.randomUUID() } })) {
    kinds.push(m.type);
    if (m.type === 'error') throw m.error;
    if (m.type === 'result') last = m.result.structuredContent as Record<string, any>;
  }
  assert.equal(kinds[0], 'taskCreated');
  assert.equal(kinds.at(-1), 'result');
  assert.equal(last!.status, 'completed');
});

test('tasks/cancel ends the run cancelled, through the REST cancel; a task that has ended cannot be cancelled', async () => {
  const c = await client(owner.key);
  // A lab that spends wall time in every window: still running when it is cancelled.
  const slow = await publishFixtureLab(owner, 'slow-lab');
  const task = await startTask(c, 'run_create', { ref: slow, inputs: { seconds_per_window: 0.5 }, max_runtime_seconds: 120, idempotency_key: crypto.randomUUID() });
  const runId = /^Run ([0-9a-f-]{36})/.exec(task.statusMessage!)![1]!;
  const cancelled = await c.experimental.tasks.cancelTask(task.taskId);
  assert.equal(cancelled.taskId, task.taskId);
  const states = await follow(c, task.taskId);
  assert.equal(states.at(-1)!.status, 'cancelled');
  assert.equal((await call('GET', `/runs/${runId}`, { key: owner.key })).body.status, 'cancelled');
  const result = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  assert.equal((result.structuredContent as Record<string, any>).status, 'cancelled');
  const again = await refusal(c.experimental.tasks.cancelTask(task.taskId));
  assert.equal(again.code, ErrorCode.InvalidParams);
  assert.match(again.message, /terminal status: cancelled/);
});

test('a call refused before any work began is a failed task whose result is that refusal, as the call answers it without a task', async () => {
  const c = await client(owner.key);
  // Listed first, so the SDK checks every answer against the tool's output schema: a refusal's envelope is one it allows.
  await c.listTools();
  const args = { ref: 'platform/no-such-lab@1.0.0', inputs: {} };
  const task = await startTask(c, 'run_create', { ...args, idempotency_key: crypto.randomUUID() });
  assert.equal(task.status, 'failed');
  const result = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  const plain = await c.callTool({ name: 'run_create', arguments: { ...args, idempotency_key: crypto.randomUUID() } });
  assert.equal(result.isError, true);
  const strip = (b: Record<string, any>) => ({ ...b, error: { ...b.error, request_id: undefined, details: { ...b.error.details, gateway_request_id: undefined } } });
  assert.deepEqual(strip(result.structuredContent as Record<string, any>), strip(plain.structuredContent as Record<string, any>));
  assert.match(task.statusMessage ?? '', new RegExp(`^${(plain.structuredContent as any).error.code}: `));
});

test('tasks are the account\'s: another account\'s key gets an unknown task from get, result and cancel, and never lists it', async () => {
  const c = await client(owner.key);
  const task = await startTask(c, 'run_create', { ref: SIR, inputs: {}, idempotency_key: crypto.randomUUID() });
  const stranger = await client(other.key);
  // Asked one after another: a refusal made before its handler is attached is an unhandled rejection.
  for (const attempt of [
    () => stranger.experimental.tasks.getTask(task.taskId),
    () => stranger.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema),
    () => stranger.experimental.tasks.cancelTask(task.taskId),
  ]) {
    const err = await refusal(attempt());
    assert.equal(err.code, ErrorCode.InvalidParams);
    assert.match(err.message, new RegExp(`Task not found: ${task.taskId}`));
  }
  // Through `silico mcp` too: the bridge passes tasks to the service, which keeps them.
  const bridged = await stdioClient(owner.key);
  assert.equal((await bridged.experimental.tasks.getTask(task.taskId)).taskId, task.taskId);
  assert.match((await refusal((await stdioClient(other.key)).experimental.tasks.getTask(task.taskId))).message, /Task not found/);
  const missing = await refusal(c.experimental.tasks.getTask('not-a-task'));
  assert.match(missing.message, /Task not found: not-a-task/);
  assert.ok(!(await stranger.experimental.tasks.listTasks()).tasks.some((t) => t.taskId === task.taskId));
  const mine = await c.experimental.tasks.listTasks();
  assert.equal(mine.tasks[0]!.taskId, task.taskId, 'newest first');
  await follow(c, task.taskId);
});

test('a study opened as a task: tasks/get counts its runs to completed, tasks/result is the study as REST reads it; tasks/cancel closes a second one, its runs cancelled', async () => {
  const c = await client(owner.key);
  const ws = await workspaceOfLab(owner.key, 'Noisy growth', path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth'));
  const arm = (label: string) => ({ label, workspace_id: ws.workspace_id, revision_id: ws.revision_id, max_runtime_seconds: 60 });
  const open = async (name: string) => {
    const plan = await call('POST', '/experiment-plans', { key: owner.key, body: { name, arms: [arm('a'), arm('b')] } });
    assert.equal(plan.status, 200, plan.text);
    return startTask(c, 'experiment_create', { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 });
  };
  const task = await open('Study as a task');
  assert.equal(task.status, 'working');
  assert.match(task.statusMessage!, /^0 of 2 runs ended/);
  const states = await follow(c, task.taskId);
  assert.equal(states.at(-1)!.status, 'completed', states.at(-1)!.statusMessage);
  assert.match(states.at(-1)!.statusMessage!, /^All 2 runs ended: /);
  const result = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  const study = result.structuredContent as Record<string, any>;
  assert.deepEqual(withoutRequestId(study), withoutRequestId((await call('GET', `/experiments/${study.id}?include_runs=false`, { key: owner.key })).body));

  const second = await open('Study cancelled as a task');
  await c.experimental.tasks.cancelTask(second.taskId);
  const ended = await follow(c, second.taskId);
  assert.equal(ended.at(-1)!.status, 'cancelled', ended.at(-1)!.statusMessage);
  const closed = (await c.experimental.tasks.getTaskResult(second.taskId, CallToolResultSchema)).structuredContent as Record<string, any>;
  assert.equal(closed.status, 'closed');
  assert.equal(closed.run_totals.completed + closed.run_totals.cancelled + closed.run_totals.failed, 2);
});

test('a publication as a task: working while it is packed and smoke-tested, completed once published; its result is publish_execute\'s answer at its end', async () => {
  const c = await client(owner.key);
  await c.listTools();
  const ws = await workspaceOfLab(owner.key, 'Noisy growth published', path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth'));
  const plan = await call('POST', '/publication-plans', { key: owner.key, body: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, version: '1.0.0' } });
  assert.equal(plan.status, 200, plan.text);
  const messages: Array<{ type: string; status?: string; result?: Record<string, any> }> = [];
  // The SDK's own loop: it polls tasks/get and checks the result against publish_execute's output schema.
  for await (const m of c.experimental.tasks.callToolStream({ name: 'publish_execute', arguments: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } })) {
    if (m.type === 'error') throw m.error;
    messages.push({ type: m.type, status: 'task' in m ? m.task.status : undefined, result: m.type === 'result' ? m.result.structuredContent as Record<string, any> : undefined });
  }
  assert.equal(messages[0]!.type, 'taskCreated');
  assert.equal(messages[0]!.status, 'working');
  const published = messages.at(-1)!.result!;
  assert.equal(published.status, 'published', JSON.stringify(published));
  assert.equal(published.reference, plan.body.reference);
  assert.equal((await call('GET', `/hub/releases/${encodeURIComponent(published.reference)}`, { key: owner.key })).status, 200, 'the release it names exists');
  assert.deepEqual(withoutRequestId(published), withoutRequestId((await call('GET', `/publications/${published.publication_id}`, { key: owner.key })).body), 'the result is the publication as its REST read answers it');
});

test('a biology fetch as a task: answered at once without waiting for the source, completed once its records are stored; its result is the fetch as a REST retry with the same key answers it', async () => {
  const c = await client(owner.key);
  const key = crypto.randomUUID();
  const args = { source_id: 'uniprot', record_ids: ['P69905'] };
  const task = await startTask(c, 'biology_fetch', { ...args, idempotency_key: key });
  assert.ok(['working', 'completed'].includes(task.status), `${task.status}: ${task.statusMessage}`);
  const states = await follow(c, task.taskId);
  assert.equal(states.at(-1)!.status, 'completed', states.at(-1)!.statusMessage);
  assert.match(states.at(-1)!.statusMessage!, /^1 record\(s\) fetched and stored\.$/);
  const result = await c.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  const fetched = result.structuredContent as Record<string, any>;
  assert.equal(fetched.resources[0].record_id, 'P69905');
  const rest = await call('POST', '/biology/fetch', { key: owner.key, headers: { 'Idempotency-Key': key }, body: args });
  assert.equal(rest.status, 200, rest.text);
  assert.deepEqual(withoutRequestId(rest.body), withoutRequestId(fetched), 'the same fetch, answered once');

  // Without a key of the caller's, the task names the fetch itself; a record that does not exist fails the task with the refusal.
  const missing = await startTask(c, 'biology_fetch', { source_id: 'uniprot', record_ids: ['Q99999'] });
  const ended = await follow(c, missing.taskId);
  assert.equal(ended.at(-1)!.status, 'failed', ended.at(-1)!.statusMessage);
  const refused = await c.experimental.tasks.getTaskResult(missing.taskId, CallToolResultSchema);
  assert.equal(refused.isError, true);
  assert.equal((refused.structuredContent as Record<string, any>).error.code, 'record_not_found');
});

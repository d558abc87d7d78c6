/**
 * docs/operations.md's incidents, each driven on the real stack: the incident is made to
 * happen, then its documented search is run as written (Temporal's list query, what the
 * UI's search box runs) and must find the workflow, its current details must say what the
 * guide says they say, and its documented commands are run as written, in order.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { admin, call, closeTestDb, hostedLabOwner, newAccount, publishFixtureLab, testDb, testObjects, until, waitForRun } from '../helpers.ts';
import { startSlowStudy } from '../slowStudy.ts';
import { workspaceWith } from '../labWorkspaces.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { KEY_SCOPES } from '../../storage/db/apiKeys.ts';
import { experimentWorkflowId, hostingWorkflowId, purchaseWorkflowId, runWorkflowId } from '../../kernel/workflowNames.ts';
import { operatorView } from '../operatorView.ts';

const GUIDE = readFileSync(path.join(REPO_ROOT, 'docs/operations.md'), 'utf8');
let connection: Connection;

before(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
});
after(async () => {
  await connection?.close();
  await closeTestDb();
});

/** An incident's search and commands, as the guide writes them, `{…}` filled in. */
function incident(key: string, values: Record<string, string>): { search: string; commands: string[] } {
  const at = GUIDE.indexOf(`<!-- incident: ${key} -->`);
  assert.ok(at >= 0, `docs/operations.md has the incident ${key}`);
  const rest = GUIDE.slice(at, GUIDE.indexOf('\n### ', at) < 0 ? undefined : GUIDE.indexOf('\n### ', at));
  const block = (lang: string) => [...rest.matchAll(/```(\S*)\n([\s\S]*?)```/g)].find((m) => m[1] === lang)?.[2] ?? assert.fail(`${key} has a ${lang} block`);
  const fill = (s: string) => s.replace(/\{(\w+)\}/g, (_, k: string) => values[k] ?? assert.fail(`${key}: no value for {${k}}`));
  return { search: fill(block('temporal-search').trim()), commands: block('sh').trim().split('\n').map(fill) };
}

/** The workflow ids a list search finds. */
async function search(query: string): Promise<string[]> {
  const found: string[] = [];
  for await (const wf of new Client({ connection }).workflow.list({ query })) found.push(wf.workflowId);
  return found;
}

/** A command of the guide, run as written: the operator CLI (its JSON answer), or the Temporal CLI. */
async function run(command: string): Promise<any> {
  const [tool, ...args] = command.split(/\s+/);
  if (tool === 'npm') {
    assert.deepEqual(args.slice(0, 3), ['run', 'admin', '--'], command);
    return admin(...args.slice(3));
  }
  assert.equal(tool, 'temporal', command);
  const { stdout } = await promisify(execFile)(process.env.SILICO_TEST_TEMPORAL_BIN!, args, { env: process.env });
  return stdout;
}

test('a run that does not end: found by the guide\'s search, read, cancelled from Temporal and read again, cancelled with only elapsed compute charged', { timeout: 180_000 }, async () => {
  const owner = await newAccount({ usd: 5 });
  const ref = await publishFixtureLab(owner, 'slow-lab');
  const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref, inputs: { seconds_per_window: 0.5, busy_seconds: 300 } } });
  assert.equal(started.status, 200, started.text);
  const runId: string = started.body.id;
  await waitForRun(owner.key, runId, 60_000, (r) => r.status === 'running' && r.started_at);
  const { search: query, commands } = incident('run-stuck', { account_id: owner.account.id, run_id: runId });
  assert.deepEqual(await search(query), [runWorkflowId(runId)]);
  assert.match((await operatorView(runWorkflowId(runId))).summary!, new RegExp(`^run of ${ref} on cpu-small for ${owner.account.id}, \\$[\\d.]+ reserved$`));
  assert.equal(commands.length, 3);
  const before = await run(commands[0]!);
  assert.deepEqual([before.run_id, before.status, before.workflow_id], [runId, 'running', runWorkflowId(runId)]);
  await run(commands[1]!);
  const cancelled = await waitForRun(owner.key, runId, 30_000);
  assert.equal(cancelled.status, 'cancelled');
  const afterwards = await run(commands[2]!);
  assert.deepEqual([afterwards.status, afterwards.credits_settled], ['cancelled', cancelled.credits_settled]);
  assert.ok(afterwards.credits_settled < afterwards.credits_reserved, 'only the elapsed compute');
});

test('webhook deliveries that went dead: found by the guide\'s search, their details say so, listed and replayed with its commands, then delivered', { timeout: 120_000 }, async () => {
  let up = false;
  const received: number[] = [];
  let server!: Server;
  const url = await new Promise<string>((resolve) => {
    server = createServer((req, res) => {
      req.resume().on('end', () => {
        received.push(up ? 200 : 500);
        res.writeHead(up ? 200 : 500).end();
      });
    }).listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`));
  });
  try {
    const owner = await newAccount({ usd: 5 });
    assert.equal((await call('POST', '/webhook-endpoints', { key: owner.key, body: { url, events: ['run.completed'] } })).status, 201);
    const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth', inputs: {} } });
    await waitForRun(owner.key, started.body.id);
    // The test stack's retry window is six seconds.
    const dead = await until(60_000, async () => (await call('GET', '/webhook-deliveries?status=dead', { key: owner.key })).body.items[0] ?? undefined);
    const workflowId = `webhook-delivery-${dead.delivery_id}-1`;
    const { search: query, commands } = incident('dead-webhooks', { account_id: owner.account.id, namespace: owner.account.namespace, delivery_id: dead.delivery_id });
    assert.deepEqual(await search(query), [workflowId]);
    assert.equal((await operatorView(workflowId)).current, `**Dead** after ${dead.attempts} attempts: the account can list and replay it.`);
    const listed = await run(commands[0]!);
    assert.deepEqual(listed.map((d: any) => [d.delivery_id, d.status, d.last_error]), [[dead.delivery_id, 'dead', 'the endpoint answered 500']]);
    up = true;
    const replayed = await run(commands[1]!);
    assert.deepEqual([replayed.delivery_id, replayed.status], [dead.delivery_id, 'pending']);
    await until(30_000, async () => ((await call('GET', '/webhook-deliveries?status=delivered', { key: owner.key })).body.items[0] ? true : undefined));
    assert.equal(received.filter((s) => s === 200).length, 1, 'delivered once');
    assert.ok((await search(query)).includes(`webhook-delivery-${dead.delivery_id}-2`), 'the replay is the next generation, a workflow of its own');
    await assert.rejects(run(commands[1]!.replace(dead.delivery_id, 'whd_nothing')), /no delivery whd_nothing of this account/);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('a hosting that failed its deployment checks: found by the guide\'s search, its details say it failed, its record names the check', { timeout: 180_000 }, async () => {
  const bad = await hostedLabOwner();
  const release = await testDb()('releases').where({ account_id: bad.owner.account.id }).first();
  await testObjects().putObject(release.archive_key, Buffer.from('not the archive'));
  const plan = await call('POST', `/labs/${bad.labId}/hosting-plans`, { key: bad.owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: bad.reference, sha256: bad.sha256 } } });
  assert.equal(plan.status, 201, plan.text);
  assert.equal((await call('POST', '/hosting-requests', { key: bad.owner.key, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } })).status, 201);
  await until(120_000, async () => ((await call('GET', `/labs/${bad.labId}/hosting`, { key: bad.owner.key })).body.status === 'failed' ? true : undefined));
  const { search: query, commands } = incident('hosting-failed', { account_id: bad.owner.account.id, lab_id: bad.labId });
  assert.deepEqual(await search(query), [hostingWorkflowId(bad.labId)]);
  assert.match((await operatorView(hostingWorkflowId(bad.labId))).current!, /^\*\*failed\*\* \(revision 1, generation \d+\): failed its deployment checks\.$/);
  const shown = await run(commands[0]!);
  assert.deepEqual([shown.lab_id, shown.status, shown.workflow_id], [bad.labId, 'failed', hostingWorkflowId(bad.labId)]);
  const record = await call('GET', `/labs/${bad.labId}/hosting`, { key: bad.owner.key });
  assert.equal(record.body.checks.find((c: any) => c.check === 'release_bytes').status, 'failed', 'the record names the check');
});

test('a purchase that did not credit: found by the guide\'s search while it waits, its details say until when, its record says pending', { timeout: 60_000 }, async () => {
  const buyer = await newAccount({ scopes: KEY_SCOPES });
  const bought = await call('POST', '/purchases', { key: buyer.key, body: { amount_usd: 20 }, headers: { 'Idempotency-Key': crypto.randomUUID() } });
  assert.equal(bought.status, 201, bought.text);
  const id: string = bought.body.purchase_id;
  const { search: query, commands } = incident('purchase-pending', { account_id: buyer.account.id, purchase_id: id });
  assert.deepEqual(await until(20_000, async () => {
    const found = await search(query);
    return found.length ? found : undefined;
  }), [purchaseWorkflowId(id)]);
  // Once it has read its purchase (its first step), it says what it waits for.
  const current = await until(20_000, async () => {
    const c = (await operatorView(purchaseWorkflowId(id))).current;
    return c?.startsWith('**pending**') ? c : undefined;
  });
  assert.equal(current, `**pending**: waiting for the provider's payment until ${bought.body.expires_at}; expired then if none came.\n\n0 signalled event batches applied.`);
  const shown = await run(commands[0]!);
  assert.deepEqual([shown.purchase_id, shown.status, shown.credited_usd, shown.workflow_id], [id, 'pending', 0, purchaseWorkflowId(id)]);
});

test('a study that stopped: found by the guide\'s search, its details stay at its batch, its pending batch and its record read with its commands, then closed by its owner', { timeout: 240_000 }, async () => {
  const owner = await newAccount({ usd: 50 });
  // Runs that go on for minutes: to an operator, a study that stopped.
  const id = await startSlowStudy(owner.key, { title: 'A study that stops', busy: [200, 250], maxRuntimeSeconds: 300 });
  const runsOf = async () => (await call('GET', `/experiments/${id}/runs?limit=100`, { key: owner.key })).body.items as any[];
  const runs = await until(60_000, async () => {
    const r = await runsOf();
    return r.some((x) => x.status === 'running') ? r : undefined;
  });
  const { search: query, commands } = incident('study-stopped', { account_id: owner.account.id, experiment_id: id });
  assert.deepEqual(await search(query), [experimentWorkflowId(id)]);
  const current = await until(30_000, async () => {
    const c = (await operatorView(experimentWorkflowId(id))).current;
    return c?.startsWith('**Batch 1**') ? c : undefined;
  });
  assert.equal(current, `**Batch 1** (${runs.length} runs): running.\n\n0 of ${runs.length} runs ended: 0 completed, 0 did not.`);
  assert.equal(commands.length, 2);
  const described: string = await run(commands[0]!);
  assert.match(described, /^Pending Activities: [1-9]\d*$/m, described);
  assert.match(described, /^\s+Type\s+executeRuns\n\s+State\s+Started\n\s+Attempt\s+1\n/m, 'a batch of it, started');
  assert.match(described, /^\s+LastHeartbeatTime\s+\S/m, 'with its last heartbeat');
  const shown = await run(commands[1]!);
  assert.deepEqual([shown.experiment_id, shown.status, shown.workflow_id], [id, 'running', experimentWorkflowId(id)]);
  assert.equal(Object.values(shown.runs as Record<string, number>).reduce((a, b) => a + b, 0), runs.length);
  assert.ok(shown.runs.running >= 1 && !shown.runs.completed, JSON.stringify(shown.runs));

  // Its owner closes it, stopping its running runs: every run ends cancelled within seconds.
  const closed = await call('PATCH', `/experiments/${id}`, { key: owner.key, body: { status: 'closed', cancel_running: true } });
  assert.equal(closed.status, 200, closed.text);
  await until(30_000, async () => ((await runsOf()).every((r) => r.status === 'cancelled') ? true : undefined));
  const afterwards = await run(commands[1]!);
  assert.deepEqual([afterwards.status, afterwards.runs], ['closed', { cancelled: runs.length }]);
});

test('an environment that cannot be built: its run fails saying so, is found by the guide\'s search, and its run and lock are read with its commands', { timeout: 600_000 }, async () => {
  const owner = await newAccount({ usd: 5 });
  const { ws, revisionId } = await workspaceWith(owner.key, 'Unbuildable', 'pinned-runtime', (p, t) => (p === 'models/core/model.yaml' ? t.replace('["biosimulant==0.0.34"]', '["biosimulant==0.0.34", "tabulate==0.9.0"]') : t));
  const plan = await call('POST', '/run-plans', { key: owner.key, body: { workspace_id: ws.workspace_id, revision_id: revisionId, inputs: {}, max_runtime_seconds: 120 } });
  assert.equal(plan.body.status, 'ready', JSON.stringify(plan.body.findings));
  const lockSha: string = plan.body.environment.lock_sha256;
  assert.equal(plan.body.environment.status, 'build_required', 'built by no worker yet');
  // The package index no longer serves one of its pins, as when a maintainer deletes a
  // release: its lock is made to pin a version no index has.
  const locks = () => testDb()('environment_locks').where({ sha256: lockSha });
  const { lock } = await locks().first();
  assert.match(lock, /^tabulate==0\.9\.0 /m);
  await locks().update({ lock: lock.replace(/^tabulate==0\.9\.0 /m, 'tabulate==999.0.0 ') });
  const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { plan_id: plan.body.plan_id, plan_sha256: plan.body.plan_sha256 } });
  assert.equal(started.status, 200, started.text);
  const failed = await waitForRun(owner.key, started.body.id, 300_000);
  assert.deepEqual([failed.status, failed.error?.code], ['failed', 'environment_build_failed'], JSON.stringify(failed.error));
  assert.match(failed.error.message, new RegExp(`could not build the environment ${lockSha}: .*tabulate`), 'the installer\'s own message');
  assert.match(failed.error.message, /999\.0\.0/);

  const { search: query, commands } = incident('environment-build-failed', { account_id: owner.account.id, ref: failed.resolved_ref, run_id: failed.id, lock_sha256: lockSha });
  assert.deepEqual(await search(query), [runWorkflowId(failed.id)]);
  assert.equal(commands.length, 2);
  const shown = await run(commands[0]!);
  assert.deepEqual([shown.run_id, shown.status, shown.error.code, shown.environment_lock_sha256], [failed.id, 'failed', 'environment_build_failed', lockSha]);
  const environment = await run(commands[1]!);
  assert.equal(environment.lock_sha256, lockSha);
  assert.equal(environment.python, '3.12');
  assert.ok(environment.pins.includes('tabulate==999.0.0') && environment.pins.includes('biosimulant==0.0.34'), JSON.stringify(environment.pins));
  assert.deepEqual([environment.built_at, environment.failed_builds, environment.latest_failure.run_id], [null, 1, failed.id]);
  assert.equal(environment.latest_failure.message, failed.error.message);
});

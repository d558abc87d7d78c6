import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { closeTestDb, newAccount, newRunRow, testDb, testObjects } from '../helpers.ts';
import { createSharedEnvironments } from '../../activities/environments/shared.ts';
import { insertAcceptedRun } from '../../storage/db/runs.ts';
import { finishRun } from '../../storage/runLifecycle.ts';
import { MAINTENANCE_SCHEDULE_ID } from '../../kernel/workflowNames.ts';

after(closeTestDb);

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const keysOf = (lock: string, layout: string) => [`environments/${lock}/${layout}.tar`, `environments/${lock}/${layout}.sha256`];

/** The archives removed, summed over the stack's workers (each serves its counter on its health port). */
async function archivesRemoved(): Promise<number> {
  const ports = (process.env.SILICO_TEST_WORKER_PORTS ?? '').split(',').filter(Boolean);
  assert.ok(ports.length, 'the suite names its workers\' health ports');
  let total = 0;
  for (const port of ports) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const value = /^silico_environment_archives_removed_total (\S+)$/m.exec(text)?.[1];
    assert.ok(value !== undefined, `worker on ${port} exports the counter:\n${text}`);
    total += Number(value);
  }
  return total;
}

/** Triggers the hourly maintenance on the stack's schedule and returns what its run did. */
async function maintenance(): Promise<Record<string, unknown>> {
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  try {
    const client = new Client({ connection });
    const since = new Date(Date.now() - 1000).toISOString();
    await client.schedule.getHandle(MAINTENANCE_SCHEDULE_ID).trigger();
    for (const started = Date.now(); Date.now() - started < 120_000; await new Promise((r) => setTimeout(r, 500))) {
      for await (const wf of client.workflow.list({ query: `WorkflowType = "maintenanceWorkflow" AND ExecutionStatus = "Completed" AND StartTime > "${since}"` })) {
        return await client.workflow.getHandle(wf.workflowId, wf.runId).result() as Record<string, unknown>;
      }
    }
    return assert.fail('the triggered maintenance did not complete within 2 minutes');
  } finally {
    await connection.close();
  }
}

test('the hourly maintenance removes an environment archive unused past its retention, with its record, and counts it; one used recently, one a queued run holds and one never noted stay', { timeout: 300_000 }, async () => {
  const db = testDb();
  const objects = testObjects();
  const shared = createSharedEnvironments(objects, db);
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-archive-test-'));
  await writeFile(path.join(dir, 'pyvenv.cfg'), 'home = /usr/bin\n');
  const layout = hex(8);
  const [unused, recent, held, unnoted] = [hex(32), hex(32), hex(32), hex(32)];
  for (const lock of [unused, recent, held]) await shared.publish(lock, layout, dir);
  // Published before uses were noted: only its objects say when.
  for (const key of keysOf(unnoted, layout)) await objects.putObject(key, Buffer.from('x'));
  await db('environment_archives').whereIn('lock_sha256', [unused, held]).update({ used_at: db.raw(`now() - interval '40 days'`) });
  const { account } = await newAccount({ usd: 5 });
  const holder = await insertAcceptedRun(db, newRunRow(account.id, { runtime_sha256: held }));
  const before = await archivesRemoved();
  try {
    const result = await maintenance();
    assert.ok(result.environment_archives, `the maintenance swept archives: ${JSON.stringify(result)}`);
  } finally {
    await finishRun(db, { runId: holder.id, status: 'failed', error: { code: 'internal_error', message: 'a test fixture' }, computeSeconds: 0 });
    await rm(dir, { recursive: true, force: true });
  }
  for (const key of keysOf(unused, layout)) assert.equal(await objects.exists(key), false, `${key} is removed`);
  assert.equal(await db('environment_archives').where({ lock_sha256: unused }).first(), undefined, 'and its record');
  for (const lock of [recent, held, unnoted]) {
    for (const key of keysOf(lock, layout)) assert.equal(await objects.exists(key), true, `${key} stays`);
  }
  assert.equal((await db('environment_archives').whereIn('lock_sha256', [recent, held])).length, 2);
  assert.equal(await archivesRemoved() - before, 1, 'the counter moved by the one archive removed');
});

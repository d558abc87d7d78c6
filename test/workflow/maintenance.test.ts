import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from '@temporalio/worker';
import { useWorkflowEnvironment, workflowsPath } from './env.ts';
import { maintenanceWorkflow, runSweepWorkflow, SWEEP_AFTER_SECONDS } from '../../workflows/maintenance.ts';
import { createMaintenanceActivities } from '../../activities/maintenance.ts';
import { closeTestDb, newAccount, testDb, testObjects } from '../helpers.ts';
import { BIOLOGY_STAGING_PREFIX } from '../../activities/biology/activities.ts';
import { blobKey } from '../../storage/objects.ts';

const testEnv = useWorkflowEnvironment();
after(closeTestDb);

async function runWith(activities: object, workflow: typeof maintenanceWorkflow | typeof runSweepWorkflow = maintenanceWorkflow): Promise<unknown> {
  const taskQueue = `test-${crypto.randomUUID()}`;
  const env = testEnv();
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowsPath, activities });
  return worker.runUntil(env.client.workflow.execute(workflow, { taskQueue, workflowId: `maintenance-${crypto.randomUUID()}` }));
}

test('runSweepWorkflow sweeps runs silent for a minute and returns them', async () => {
  const asked: number[] = [];
  const result = await runWith({ async sweepLostRuns(stale: number) { asked.push(stale); return ['run-a']; } }, runSweepWorkflow);
  assert.deepEqual(result, { swept: ['run-a'] });
  assert.deepEqual(asked, [SWEEP_AFTER_SECONDS]);
  assert.equal(SWEEP_AFTER_SECONDS, 60);
});

test('maintenanceWorkflow returns what it purged and reconciled, retrying a failing activity', async () => {
  let calls = 0;
  const result = await runWith({
    async purgeExpired() {
      calls += 1;
      if (calls === 1) throw new Error('transient');
      return { idempotency_keys: 3, rate_limits: 2 };
    },
    async reconcileOrphans(olderThan: number) {
      assert.equal(olderThan, 3600, 'records are left to their workflow for an hour first');
      return { run: 1, publication: 0, dataset: 2 };
    },
    async sweepUnnamedObjects(grace: number) {
      assert.equal(grace, 24 * 3600, 'an unnamed object is kept a day first');
      return { removed: 4, kept_young: 5 };
    },
    async sweepEnvironmentArchives(retention: number) {
      assert.equal(retention, 30 * 24 * 3600, 'an environment archive is kept 30 days without use');
      return { removed: 1, kept: 6 };
    },
  });
  assert.deepEqual(result, {
    idempotency_keys: 3, rate_limits: 2, reconciled: { run: 1, publication: 0, dataset: 2 }, unnamed_objects: { removed: 4, kept_young: 5 }, environment_archives: { removed: 1, kept: 6 },
  });
  assert.equal(calls, 2);
});

test('the real purge activity removes keys past 24 h, expired counters and a biology fetch\'s forgotten staging, and keeps the rest', async () => {
  const db = testDb();
  const { account } = await newAccount();
  await db('idempotency_keys').insert([
    { account_id: account.id, key: 'old', route: 'POST /runs', request_sha256: 'x', state: 'completed', created_at: db.raw(`now() - interval '25 hours'`) },
    { account_id: account.id, key: 'fresh', route: 'POST /runs', request_sha256: 'x', state: 'completed' },
  ]);
  await db('rate_limits').insert([{ key: `test:expired:${account.id}`, points: 1, expire: Date.now() - 1000 }, { key: `test:live:${account.id}`, points: 1, expire: Date.now() + 60000 }]);
  // Staging a fetch left (its worker lost for good), and a stored blob, which is never touched.
  const objects = testObjects();
  const staged = `${BIOLOGY_STAGING_PREFIX}${crypto.randomUUID()}/${'b'.repeat(64)}`;
  await objects.putObject(staged, Buffer.from('a record'));
  const blob = await objects.putBlob(Buffer.from(`kept ${crypto.randomUUID()}`));
  await new Promise((r) => setTimeout(r, 1100));
  const result = await runWith({
    ...createMaintenanceActivities({ db, objects, idempotencyTtlSeconds: 24 * 3600, workflowState: async () => 'open', executions: { lastHeartbeat: async () => null, terminate: async () => undefined }, stagingKeptMs: 500 }),
    // The sweep of unnamed objects has its own test (test/integration/objectSweep.test.ts).
    async sweepUnnamedObjects() { return { removed: 0, kept_young: 0 }; },
    async sweepEnvironmentArchives() { return { removed: 0, kept: 0 }; },
  }) as { idempotency_keys: number; rate_limits: number; staged_objects: number };
  assert.ok(result.idempotency_keys >= 1 && result.rate_limits >= 1 && result.staged_objects >= 1, JSON.stringify(result));
  assert.equal(await objects.exists(staged), false);
  assert.equal(await objects.exists(blobKey(blob)), true);
  const keys = (await db('idempotency_keys').where({ account_id: account.id })).map((r) => r.key);
  assert.deepEqual(keys, ['fresh']);
  assert.equal((await db('rate_limits').where({ key: `test:expired:${account.id}` })).length, 0);
  assert.equal((await db('rate_limits').where({ key: `test:live:${account.id}` })).length, 1);
});

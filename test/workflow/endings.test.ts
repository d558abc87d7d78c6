import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, type Workflow } from '@temporalio/common';
import { WorkflowFailedError, type WorkflowHandle, type WorkflowStartOptions } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { bundledWorkflows, useWorkflowEnvironment } from './env.ts';
import { maintenanceWorkflow, runSweepWorkflow } from '../../workflows/maintenance.ts';
import { passportWorkflow } from '../../workflows/passport.ts';
import { webhookDeliveryWorkflow } from '../../workflows/webhookDelivery.ts';
import { sessionStateQuery, sessionWorkflow } from '../../workflows/session.ts';
import { biologyFetchWorkflow, biologySearchWorkflow } from '../../workflows/biology.ts';
import { experimentWorkflow } from '../../workflows/experiment.ts';
import { studyWorkflow } from '../../workflows/study.ts';
import { purchaseWorkflow } from '../../workflows/purchase.ts';
import { publicationWorkflow } from '../../workflows/publication.ts';
import { datasetRegistrationWorkflow } from '../../workflows/datasetRegistration.ts';
import { runWorkflow } from '../../workflows/run.ts';
import { invocationWorkflow } from '../../workflows/invocation.ts';
import { petabInspectWorkflow } from '../../workflows/petab.ts';
import { CONTROL_TASK_QUEUE, computeTaskQueue } from '../../kernel/workflowNames.ts';

// Each workflow driven, its activities stubbed, to the closings the running service seldom
// shows: failed (a step refused for good) and cancelled (an operator or the api cancelling
// it mid-step). The workflow code is the real one; with SILICO_CAPTURE_HISTORIES set, the
// histories are kept for the replay test (test/replay), and each one replays here already.
// A record a cancelled or failed workflow leaves open is the hourly reconciliation's
// (activities/maintenance.ts: a record whose workflow is gone or closed is ended).
const testEnv = useWorkflowEnvironment({ captureHistories: true });

/** How a stubbed activity answers: refuses for good, holds until it is cancelled, or as the function does. */
type Stub = 'refuse' | 'hold' | ((...args: any[]) => unknown);

/** The activities of `stubs`, each call noted in `calls` by name (and `<name> stopped` when a held one is cancelled). */
function activities(calls: string[], stubs: Record<string, Stub>): Record<string, (...args: unknown[]) => Promise<unknown>> {
  return Object.fromEntries(Object.entries(stubs).map(([name, stub]) => [name, async (...args: unknown[]) => {
    calls.push(name);
    if (stub === 'refuse') throw ApplicationFailure.nonRetryable(`${name} refused`);
    if (stub !== 'hold') return stub(...args);
    const ctx = Context.current();
    try {
      for (;;) {
        ctx.heartbeat();
        await ctx.sleep(100);
      }
    } catch (err) {
      if (err instanceof CancelledFailure) calls.push(`${name} stopped`);
      throw err;
    }
  }]));
}

async function until(what: string, probe: () => Promise<unknown> | unknown, ms = 20_000): Promise<void> {
  for (const started = Date.now(); !(await probe());) {
    if (Date.now() - started > ms) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Runs `workflow` to its close with workers on the queues of `stubs` (the first, the
 * workflow's own, also runs workflows), cancelling it once `cancelWhen` holds when given.
 * Returns what its result threw or returned, its closing status and the activity calls;
 * its history replays against the workflow code.
 */
async function close<W extends Workflow>(workflow: W, args: Parameters<W>, stubs: Record<string, Record<string, Stub>>, cancelWhen?: (calls: string[], handle: WorkflowHandle<W>) => Promise<unknown> | unknown) {
  const env = testEnv();
  const calls: string[] = [];
  const queues = Object.keys(stubs);
  const workers = await Promise.all(queues.map(async (taskQueue, i) => Worker.create({
    connection: env.nativeConnection, taskQueue, activities: activities(calls, stubs[taskQueue]!),
    // A cancellation reaches a held activity on its next heartbeat: at once, not 30 s later.
    maxHeartbeatThrottleInterval: '100 milliseconds',
    ...(i === 0 ? { workflowBundle: await bundledWorkflows() } : {}),
  })));
  const workflowId = `${workflow.name}-${crypto.randomUUID()}`;
  const queueOf = (name: string) => queues.find((q) => name in stubs[q]!) ?? '';
  const body = async () => {
    // The options' `args` are typed by a conditional on W that a generic W cannot resolve.
    const handle = await env.client.workflow.start(workflow, { taskQueue: queues[0]!, workflowId, args } as unknown as WorkflowStartOptions<W>);
    if (cancelWhen) {
      await until('the moment to cancel', () => cancelWhen(calls, handle));
      await handle.cancel();
    }
    const outcome: unknown = await handle.result().catch((err: unknown) => err);
    // Held activities hear of the cancellation on their next heartbeat.
    await until('every held activity stopped', () => calls.filter((c) => c.endsWith(' stopped')).length === calls.filter((c) => stubs[queueOf(c)]?.[c] === 'hold').length, 5_000).catch(() => undefined);
    return { outcome, status: (await handle.describe()).status.name, history: await handle.fetchHistory() };
  };
  const ran = await workers.reduce<() => Promise<Awaited<ReturnType<typeof body>>>>((inner, w) => () => w.runUntil(inner), body)();
  await Worker.runReplayHistory({ workflowBundle: await bundledWorkflows() }, ran.history, workflowId);
  return { outcome: ran.outcome, status: ran.status, calls };
}

/** Whether the workflow's result was a failure caused by a cancellation (its closing status says which). */
const cancelled = (outcome: unknown) => outcome instanceof WorkflowFailedError && outcome.cause instanceof CancelledFailure;
/** Whether the workflow failed with `message` in its cause (an activity's failure, or the local activity's error itself). */
const failedWith = (outcome: unknown, message: RegExp) =>
  outcome instanceof WorkflowFailedError && message.test(`${outcome.cause?.message} ${(outcome.cause?.cause as Error | undefined)?.message}`);

/** Once the workflow waits on a timer (its last event): between attempts, not in one. */
const onTimer = async (handle: WorkflowHandle<Workflow>) => (await handle.fetchHistory()).events?.at(-1)?.timerStartedEventAttributes;

const q = () => `test-${crypto.randomUUID()}`;

test('maintenanceWorkflow fails when a purge is refused for good, reconciling nothing after it', async () => {
  const { outcome, status, calls } = await close(maintenanceWorkflow, [], { [q()]: { purgeExpired: 'refuse', reconcileOrphans: () => ({}), sweepUnnamedObjects: () => ({}), sweepEnvironmentArchives: () => ({}) } });
  assert.ok(failedWith(outcome, /purgeExpired refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['purgeExpired']);
});

test('maintenanceWorkflow cancelled mid-purge ends cancelled, the purge asked to stop and nothing after it', async () => {
  const { outcome, status, calls } = await close(maintenanceWorkflow, [], { [q()]: { purgeExpired: 'hold', reconcileOrphans: () => ({}), sweepUnnamedObjects: () => ({}), sweepEnvironmentArchives: () => ({}) } },
    (c) => c.includes('purgeExpired'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls, ['purgeExpired', 'purgeExpired stopped']);
});

test('maintenanceWorkflow fails when the sweep of unnamed objects is refused for good, after purging and reconciling', async () => {
  const { outcome, status, calls } = await close(maintenanceWorkflow, [], { [q()]: { purgeExpired: () => ({}), reconcileOrphans: () => ({}), sweepUnnamedObjects: 'refuse' } });
  assert.ok(failedWith(outcome, /sweepUnnamedObjects refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['purgeExpired', 'reconcileOrphans', 'sweepUnnamedObjects']);
});

test('maintenanceWorkflow cancelled mid-sweep of unnamed objects ends cancelled, the sweep asked to stop', async () => {
  const { outcome, status, calls } = await close(maintenanceWorkflow, [], { [q()]: { purgeExpired: () => ({}), reconcileOrphans: () => ({}), sweepUnnamedObjects: 'hold' } },
    (c) => c.includes('sweepUnnamedObjects'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls, ['purgeExpired', 'reconcileOrphans', 'sweepUnnamedObjects', 'sweepUnnamedObjects stopped']);
});

test('runSweepWorkflow fails when the sweep is refused for good', async () => {
  const { outcome, status } = await close(runSweepWorkflow, [], { [q()]: { sweepLostRuns: 'refuse' } });
  assert.ok(failedWith(outcome, /sweepLostRuns refused/), String(outcome));
  assert.equal(status, 'FAILED');
});

test('runSweepWorkflow cancelled mid-sweep ends cancelled, the sweep asked to stop', async () => {
  const { outcome, status, calls } = await close(runSweepWorkflow, [], { [q()]: { sweepLostRuns: 'hold' } }, (c) => c.includes('sweepLostRuns'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls, ['sweepLostRuns', 'sweepLostRuns stopped']);
});

const CHECKS = ['passportPackageIntegrity', 'passportArtifactHashes', 'passportContracts', 'passportProvenance', 'passportReproducibility'];
const passportArgs = () => ({ passportId: `pp_${crypto.randomUUID()}`, accountId: 'acct_test', subject: { kind: 'run' as const, run_id: crypto.randomUUID() } });

test('passportWorkflow fails when a check is refused for good; what was staged is discarded, nothing sealed', async () => {
  const { outcome, status, calls } = await close(passportWorkflow, [passportArgs()], { [q()]: {
    ...Object.fromEntries(CHECKS.map((c) => [c, c === 'passportProvenance' ? 'refuse' : () => undefined])), sealPassport: () => 'pp', discardPassport: () => undefined,
  } });
  assert.ok(failedWith(outcome, /passportProvenance refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.equal(calls.at(-1), 'discardPassport');
  assert.ok(!calls.includes('sealPassport'));
});

test('passportWorkflow cancelled mid-check ends cancelled: every check asked to stop, nothing sealed', async () => {
  const { outcome, status, calls } = await close(passportWorkflow, [passportArgs()], { [q()]: {
    ...Object.fromEntries(CHECKS.map((c) => [c, 'hold'])), sealPassport: () => 'pp', discardPassport: () => undefined,
  } }, (c) => CHECKS.every((check) => c.includes(check)));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls.filter((c) => c.endsWith(' stopped')).sort(), CHECKS.map((c) => `${c} stopped`).sort());
  assert.ok(!calls.includes('sealPassport'));
  // The discard is scheduled in the cancelled workflow, so it never runs: the staged
  // evidence stays (keyed by a passport that will never be sealed; nothing purges it).
  assert.ok(!calls.includes('discardPassport'));
});

const delivery = () => ({ deliveryId: `whd_${crypto.randomUUID()}`, generation: 1, firstRetryMs: 60_000, maxRetryMs: 60_000, retryForMs: 24 * 3600_000 });

test('webhookDeliveryWorkflow fails when an attempt is refused for good (not an endpoint\'s failure: those are retried)', async () => {
  const { outcome, status, calls } = await close(webhookDeliveryWorkflow, [delivery()], { [q()]: { webhookAttempt: 'refuse', webhookDeadLetter: () => undefined } });
  assert.ok(failedWith(outcome, /webhookAttempt refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['webhookAttempt'], 'not dead-lettered');
});

test('webhookDeliveryWorkflow cancelled while it waits to retry ends cancelled, with no dead letter', async () => {
  const { outcome, status, calls } = await close(webhookDeliveryWorkflow, [delivery()], { [q()]: { webhookAttempt: () => ({ done: false, delivered: false }), webhookDeadLetter: () => undefined } },
    (_c, handle) => onTimer(handle));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls, ['webhookAttempt']);
});

test('sessionWorkflow cancelled between changes ends cancelled, recording nothing', async () => {
  const initial = { sessionId: `ses_${crypto.randomUUID()}`, version: 1, requirements: [], steps: [], seq: 0, externals: [], historyBound: 400 };
  const { outcome, status, calls } = await close(sessionWorkflow, [initial], { [q()]: {} },
    async (_c, handle) => (await handle.query(sessionStateQuery)).version === 1);
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls, []);
});

test('biologySearchWorkflow cancelled while its sources are asked ends cancelled, every source asked to stop', async () => {
  const sourceIds = ['uniprot', 'pdb'] as const;
  const { outcome, status, calls } = await close(biologySearchWorkflow, [{ sourceIds: [...sourceIds], query: 'hemoglobin', limit: 5 }], { [q()]: { biologySearchSource: 'hold' } },
    (c) => c.filter((x) => x === 'biologySearchSource').length === sourceIds.length);
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.equal(calls.filter((c) => c === 'biologySearchSource stopped').length, sourceIds.length);
});

test('biologyFetchWorkflow cancelled while recording ends cancelled, and what it staged is discarded', async () => {
  const fetchId = crypto.randomUUID();
  const fetched = (a: { recordId: string }) => ({ record_id: a.recordId, url: `https://example.org/${a.recordId}`, sha256: 'a'.repeat(64), size_bytes: 3, media_type: 'text/plain', version: null, retrieved_at: new Date().toISOString() });
  const discarded: string[] = [];
  const { outcome, status, calls } = await close(biologyFetchWorkflow, [{ fetchId, accountId: 'acct_test', sourceId: 'uniprot', recordIds: ['P69905', 'P68871'], format: 'fasta', expectedSha256: null }],
    { [q()]: { biologyFetchRecord: fetched, recordBiologyResources: 'hold', discardBiologyFetch: (a: { fetchId: string }) => { discarded.push(a.fetchId); return 2; } } },
    (c) => c.includes('recordBiologyResources'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(discarded, [fetchId], 'the staging removed, though the fetch was cancelled');
  assert.ok(calls.includes('recordBiologyResources stopped'));
});

test('experimentWorkflow fails when its schedule cannot be read, starting no run', async () => {
  const { outcome, status, calls } = await close(experimentWorkflow, [{ experimentId: `exp_${crypto.randomUUID()}` }], { [CONTROL_TASK_QUEUE]: { experimentSchedule: 'refuse', finishExperiment: () => undefined } });
  assert.ok(failedWith(outcome, /experimentSchedule refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['experimentSchedule']);
});

test('experimentWorkflow cancelled with a batch in flight ends cancelled: every run of the comparison ends cancelled and settled, no other batch executes, the comparison is not stored', async () => {
  const profile = `p-${crypto.randomUUID().slice(0, 8)}`;
  // Two arms of one run each: a batch holds one arm's runs, so the second arm's run never executes.
  const runs = [0, 1].map((arm) => ({ runId: crypto.randomUUID(), ref: `ns/lab@${arm}`, arm }));
  const settled: Array<{ runId: string; status: string }> = [];
  const { outcome, status, calls } = await close(experimentWorkflow, [{ experimentId: `exp_${crypto.randomUUID()}` }], {
    [CONTROL_TASK_QUEUE]: {
      experimentSchedule: () => ({ account: 'acct_test', runs, window: 1 }),
      finishExperiment: () => undefined,
      runSchedule: () => ({ profile, maxRuntimeSeconds: 60, scheduleToStartSeconds: 30 }),
      openRuns: (ids: string[]) => ids.filter((id) => !settled.some((s) => s.runId === id)),
      endRuns: (ids: string[], ending: { status: string }) => {
        const open = ids.filter((id) => !settled.some((s) => s.runId === id));
        for (const runId of open) settled.push({ runId, status: ending.status });
        return open;
      },
    },
    [computeTaskQueue(profile)]: { executeRuns: 'hold' },
  }, (c) => c.includes('executeRuns'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(settled, runs.map((r) => ({ runId: r.runId, status: 'cancelled' })), 'the run in flight and the one never begun both end cancelled');
  assert.equal(calls.filter((c) => c === 'executeRuns').length, 1, 'the other arm\'s batch never executed');
  assert.ok(!calls.includes('finishExperiment'));
});

test('studyWorkflow fails when its schedule cannot be read, asking for nothing', async () => {
  const { outcome, status, calls } = await close(studyWorkflow, [{ experimentId: `exp_${crypto.randomUUID()}` }], { [CONTROL_TASK_QUEUE]: { studySchedule: 'refuse', studyAsk: () => ({ runIds: [] }), finishStudy: () => undefined } });
  assert.ok(failedWith(outcome, /studySchedule refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['studySchedule']);
});

test('studyWorkflow cancelled with a batch in flight ends cancelled: its runs end cancelled and settled, nothing told, no other batch asked, no analysis', async () => {
  const profile = `p-${crypto.randomUUID().slice(0, 8)}`;
  const runIds = [crypto.randomUUID(), crypto.randomUUID()];
  const settled: Array<{ runId: string; status: string }> = [];
  const { outcome, status, calls } = await close(studyWorkflow, [{ experimentId: `exp_${crypto.randomUUID()}` }], {
    [CONTROL_TASK_QUEUE]: {
      studySchedule: () => ({ account: 'acct_test', ref: 'ns/lab@1', window: 1 }),
      studyAsk: () => ({ runIds, standing: { runs: runIds.length, completed: 0, notCompleted: 0 } }),
      studyTell: () => undefined,
      finishStudy: () => undefined,
      runSchedule: () => ({ profile, maxRuntimeSeconds: 60, scheduleToStartSeconds: 30 }),
      openRuns: (ids: string[]) => ids.filter((id) => !settled.some((s) => s.runId === id)),
      endRuns: (ids: string[], ending: { status: string }) => {
        const open = ids.filter((id) => !settled.some((s) => s.runId === id));
        for (const runId of open) settled.push({ runId, status: ending.status });
        return open;
      },
    },
    [computeTaskQueue(profile)]: { executeRuns: 'hold' },
  }, (c) => c.includes('executeRuns'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  // The batch held both runs (one place, two runs): each ends cancelled, charged for the time it ran (none for one that never began).
  assert.deepEqual(settled, runIds.map((runId) => ({ runId, status: 'cancelled' })));
  assert.equal(calls.filter((c) => c === 'studyAsk').length, 1);
  assert.ok(!calls.includes('studyTell') && !calls.includes('finishStudy'));
});

test('publicationWorkflow fails when a failed packing cannot even be recorded as failed', async () => {
  const { outcome, status, calls } = await close(publicationWorkflow, [{ publicationId: `pub_${crypto.randomUUID()}` }], {
    [q()]: { publicationInfo: (id: string) => ({ publicationId: id, smokeInputs: null }), failPublication: 'refuse', recordRelease: () => 'rel' },
    [computeTaskQueue('cpu-small')]: { packRevision: 'refuse' },
  });
  assert.ok(failedWith(outcome, /failPublication refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['publicationInfo', 'packRevision', 'failPublication'], 'nothing released');
});

test('publicationWorkflow cancelled mid-packing ends cancelled, the packing asked to stop and nothing released', async () => {
  const { outcome, status, calls } = await close(publicationWorkflow, [{ publicationId: `pub_${crypto.randomUUID()}` }], {
    [q()]: { publicationInfo: (id: string) => ({ publicationId: id, smokeInputs: null }), failPublication: () => undefined, recordRelease: () => 'rel' },
    [computeTaskQueue('cpu-small')]: { packRevision: 'hold' },
  }, (c) => c.includes('packRevision'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  // Recording the failure is scheduled in the cancelled workflow, so it never runs either.
  assert.deepEqual(calls, ['publicationInfo', 'packRevision', 'packRevision stopped']);
});

test('petabInspectWorkflow fails when the inspection is refused for good (no toolkit on the worker), inspecting once', async () => {
  const { outcome, status, calls } = await close(petabInspectWorkflow, [{ tree: {}, yaml: 'problem.yaml' }], { [q()]: {}, [computeTaskQueue('cpu-small')]: { inspectPetabProblem: 'refuse' } });
  assert.ok(failedWith(outcome, /inspectPetabProblem refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['inspectPetabProblem']);
});

test('petabInspectWorkflow cancelled mid-inspection ends cancelled, the engine asked to stop', async () => {
  const { outcome, status, calls } = await close(petabInspectWorkflow, [{ tree: {}, yaml: 'problem.yaml' }], { [q()]: {}, [computeTaskQueue('cpu-small')]: { inspectPetabProblem: 'hold' } }, (c) => c.includes('inspectPetabProblem'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls, ['inspectPetabProblem', 'inspectPetabProblem stopped']);
});

test('datasetRegistrationWorkflow fails when its verdict cannot be recorded', async () => {
  const { outcome, status, calls } = await close(datasetRegistrationWorkflow, [{ datasetId: `ds_${crypto.randomUUID()}` }], { [q()]: { verifyMembers: () => [], finishDataset: 'refuse' } });
  assert.ok(failedWith(outcome, /finishDataset refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['verifyMembers', 'finishDataset']);
});

test('datasetRegistrationWorkflow cancelled mid-verification ends cancelled, the verification asked to stop and no verdict recorded', async () => {
  const { outcome, status, calls } = await close(datasetRegistrationWorkflow, [{ datasetId: `ds_${crypto.randomUUID()}` }], { [q()]: { verifyMembers: 'hold', finishDataset: () => undefined } },
    (c) => c.includes('verifyMembers'));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls, ['verifyMembers', 'verifyMembers stopped']);
});

test('runWorkflow fails when the ending of its completed execution cannot be settled', async () => {
  const profile = `p-${crypto.randomUUID().slice(0, 8)}`;
  const { outcome, status, calls } = await close(runWorkflow, [{ runId: crypto.randomUUID() }], {
    [q()]: { runSchedule: () => ({ profile, maxRuntimeSeconds: 60, scheduleToStartSeconds: 30 }), acquireSlot: () => 'running', finish: 'refuse' },
    [computeTaskQueue(profile)]: { executeLab: () => ({ status: 'completed', computeSeconds: 1 }) },
  });
  assert.ok(failedWith(outcome, /finish refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['runSchedule', 'acquireSlot', 'executeLab', 'finish']);
});

test('invocationWorkflow fails when the ending of its completed invocation cannot be settled', async () => {
  const served = `serve-q-${crypto.randomUUID()}`;
  const args = { invocationId: `inv_${crypto.randomUUID()}`, schedule: { labId: 'lab_test', generation: 1, maxSeconds: 30 }, servedBy: served };
  const { outcome, status, calls } = await close(invocationWorkflow, [args], {
    [q()]: { finishInvocation: 'refuse' },
    [served]: { invokeHosted: () => ({ status: 'completed', error: null, computeSeconds: 1 }) },
  });
  assert.ok(failedWith(outcome, /finishInvocation refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['invokeHosted', 'finishInvocation']);
});

test('purchaseWorkflow fails when its purchase cannot be read, applying and expiring nothing', async () => {
  const { outcome, status, calls } = await close(purchaseWorkflow, [{ purchaseId: crypto.randomUUID() }], { [q()]: { purchaseState: 'refuse', applyPurchaseEvents: () => ({}), expirePurchase: () => ({}) } });
  assert.ok(failedWith(outcome, /purchaseState refused/), String(outcome));
  assert.equal(status, 'FAILED');
  assert.deepEqual(calls, ['purchaseState']);
});

test('purchaseWorkflow cancelled while it waits for payment ends cancelled, expiring nothing', async () => {
  const { outcome, status, calls } = await close(purchaseWorkflow, [{ purchaseId: crypto.randomUUID() }], {
    [q()]: { purchaseState: () => ({ status: 'pending', expiresAtMs: Date.now() + 3_600_000 }), applyPurchaseEvents: () => ({}), expirePurchase: () => ({}) },
  }, async (c, handle) => c.includes('purchaseState') && await onTimer(handle));
  assert.ok(cancelled(outcome), String(outcome));
  assert.equal(status, 'CANCELLED');
  assert.deepEqual(calls, ['purchaseState']);
});

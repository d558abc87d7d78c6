import { NativeConnection, Worker, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import pino from 'pino';
import { loadConfig } from '../kernel/config.ts';
import { createDb, createPgPool } from '../storage/db/knex.ts';
import { createCounters } from '../storage/db/rateLimits.ts';
import { createBiologyActivities } from '../activities/biology/activities.ts';
import { createSessionActivities } from '../activities/sessions/activities.ts';
import { createWebhookActivities } from '../activities/webhooks.ts';
import { startWebhookDispatcher } from './webhookDispatcher.ts';
import { startInvocationRecovery } from './invocationRecovery.ts';
import { createMaintenanceActivities } from '../activities/maintenance.ts';
import { createObjectSweepActivities } from '../activities/objectSweep.ts';
import { createEnvironmentArchiveActivities } from '../activities/environmentArchives.ts';
import { claimScratchRoot, clearDeadWorkers } from '../activities/workerScratch.ts';
import { Counter, Registry } from 'prom-client';
import { CONTROL_TASK_QUEUE, RUN_TASK_QUEUE, computeTaskQueue, servingTaskQueue } from '../kernel/workflowNames.ts';
import { createRunActivities } from '../activities/runs.ts';
import { createExecutionActivities, executeRun } from '../activities/execution/execute.ts';
import { createBatchActivities } from '../activities/execution/batch.ts';
import { createSandbox } from '../activities/execution/sandbox.ts';
import { createWarmParents } from '../activities/execution/warmParents.ts';
import { Client, Connection } from '@temporalio/client';
import { executionProbeOf, workflowStateOf } from '../activities/workflowState.ts';
import { createObjectStore } from '../storage/objects.ts';
import { createPublicationActivities } from '../activities/publication.ts';
import { createDatasetActivities } from '../activities/datasets.ts';
import { createExperimentActivities } from '../activities/experiments.ts';
import { createStudyActivities } from '../activities/studies/studies.ts';
import { createPurchaseActivities } from '../activities/purchases.ts';
import { paymentProvider } from '../kernel/payments.ts';
import { createAnalysis } from '../activities/studies/analysis.ts';
import { createHostingActivities } from '../activities/hosting.ts';
import { createInvocationActivities, type Deployments } from '../activities/invocations.ts';
import { hostname, tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import { createPassportActivities } from '../activities/passport/activities.ts';
import { createPetabActivities } from '../activities/petab/activities.ts';
import { registerKeyring } from '../storage/passportKeys.ts';
import { WORKFLOWS_PATH } from './workflowBundle.ts';
import { resealEndpointSecrets } from '../storage/db/webhooks.ts';
import { startWorkerHealth } from './workerHealth.ts';
import { runWorkerOptions } from './runWorker.ts';
import { createNotificationListener } from '../storage/db/notifications.ts';
import { createInvocationCancelWatch, createRunCancelWatch, INVOCATION_CANCELS_CHANNEL, RUN_CANCELS_CHANNEL } from '../storage/db/cancelWatch.ts';
import { INVOCATIONS_ACCEPTED_CHANNEL } from '../storage/db/hostedInvocations.ts';
import { createLoneRunWatch, LONE_RUNS_CHANNEL } from '../storage/db/loneRunWatch.ts';

/**
 * The worker process: hosts every workflow and the control-queue activities (lone runs'
 * on a queue of their own), with their dependencies built once here and injected.
 */
/** Lab executions at once per compute profile this worker serves. */
const COMPUTE_SLOTS = 2;

async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.logLevel, base: { process: 'worker' } });
  // Before anything makes a temporary directory: what killed workers of this machine left
  // goes, and this one's go under a root of its own (activities/workerScratch.ts).
  const machineTmp = tmpdir();
  const cleared = await clearDeadWorkers(machineTmp, config.environments.dir);
  if (cleared.length) log.info({ cleared }, 'removed the temporary directories of workers that are gone');
  await claimScratchRoot(machineTmp);
  Runtime.install({ telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } } });
  const db = createDb(config.databaseUrl, { timeoutMs: config.dependencyTimeoutMs });
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  // A client of Temporal for the activities that ask about workflows (reconciliation).
  const clientConnection = await Connection.connect({ address: config.temporal.address });
  const client = new Client({ connection: clientConnection, namespace: config.temporal.namespace });
  const objects = createObjectStore(config.s3, { timeoutMs: config.dependencyTimeoutMs });
  const sandbox = createSandbox(config.sandbox);
  if (config.sandbox.unsafeNoSandbox) {
    log.warn('SILICO_UNSAFE_NO_SANDBOX=1: LAB CODE RUNS UNSANDBOXED, AS THIS WORKER\'S USER, WITH ITS NETWORK AND FILES. Local development only; never serve strangers\' labs like this.');
  }
  // Keys dropped into the keyring since the last start are recorded (the newest signs).
  if (config.passports.keysDir) await registerKeyring(db, config.passports.keysDir);
  // Webhook secrets stored before sealing, or under a rotated secrets key, are sealed under the current one.
  const resealed = await resealEndpointSecrets(db, config.secrets);
  if (resealed) log.info(`sealed ${resealed} webhook endpoint secret(s) under secrets key ${config.secrets.current.id}`);
  const publication = createPublicationActivities({ db, objects, python: config.python, environments: config.environments, sandbox });
  const hosting = createHostingActivities({ db, objects, python: config.python, environments: config.environments, sandbox });
  // Warm instances of the deployments this process serves, reached through its own task
  // queue: an invocation is sent to the worker that holds its deployment's instances.
  const deployments: Deployments = new Map();
  const hostQueue = `host-${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  const sourcePacing = createPgPool(config.databaseUrl, 2);
  // Cancelled runs and invocations are stopped on the notice, not on the next heartbeat or lease renewal.
  const profiles = config.worker.computeProfiles;
  const cancelNotices = profiles.length ? await createNotificationListener(config.databaseUrl, [RUN_CANCELS_CHANNEL, INVOCATION_CANCELS_CHANNEL, LONE_RUNS_CHANNEL, INVOCATIONS_ACCEPTED_CHANNEL]) : null;
  const runCancels = cancelNotices ? createRunCancelWatch(db, cancelNotices) : undefined;
  const invocationCancels = cancelNotices ? createInvocationCancelWatch(db, cancelNotices) : undefined;
  // Studies' batches give their slots back at once when a lone run is accepted on their queue.
  const loneRuns = cancelNotices ? createLoneRunWatch(cancelNotices) : undefined;
  // What the worker's housekeeping counts, served on its health port.
  const registry = new Registry();
  const archivesRemoved = new Counter({ name: 'silico_environment_archives_removed_total', help: 'Shared environment archives removed after their retention without use', registers: [registry] });
  // An invocation accepted for a deployment served here begins on its announcement; its
  // workflow's activity joins it when it arrives (a missed announcement costs only that wait).
  const announced = cancelNotices ? (begin: (id: string) => void) => cancelNotices.on(INVOCATIONS_ACCEPTED_CHANNEL, (payload) => {
    const [queue, id] = payload.split(' ');
    if (queue === hostQueue && id) begin(id);
  }) : undefined;
  const invocations = createInvocationActivities({ db, objects, python: config.python, environments: config.environments, sandbox, deployments, hostQueue, cancels: invocationCancels, announced });
  const control = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: CONTROL_TASK_QUEUE,
    // A worker that dies holds its cached workflows' next tasks on its sticky queue until
    // this runs out; then any worker takes them. Kept short so a cancel (or any signal) to
    // a workflow whose worker died is handled within seconds, at the cost of a replay.
    stickyQueueScheduleToStartTimeout: '2 seconds',
    // A pre-built bundle when the stack made one (npm start); the sources under test.
    ...(config.worker.workflowBundle ? { workflowBundle: { codePath: config.worker.workflowBundle } } : { workflowsPath: WORKFLOWS_PATH }),
    activities: {
      ...createMaintenanceActivities({ db, objects, idempotencyTtlSeconds: config.limits.idempotencyTtlSeconds, workflowState: workflowStateOf(client), executions: executionProbeOf(client) }),
      ...createObjectSweepActivities({ db, objects }),
      ...createEnvironmentArchiveActivities({ db, objects, removed: archivesRemoved }),
      ...createRunActivities({ db, maxConcurrentRuns: config.limits.concurrentRunsPerAccount }),
      ...publication,
      ...createDatasetActivities({ db, objects }),
      ...createExperimentActivities({ db, objects, maxConcurrentRuns: config.limits.concurrentRunsPerAccount }),
      ...createStudyActivities({ db, objects, analysis: createAnalysis(config.analysisPython), maxConcurrentRuns: config.limits.concurrentRunsPerAccount }),
      ...hosting,
      ...invocations,
      ...createPassportActivities({ db, objects, keysDir: config.passports.keysDir }),
      ...createSessionActivities({ db }),
      ...createPurchaseActivities({ db, provider: paymentProvider(config.payments) }),
      ...createWebhookActivities({ db, config: config.webhooks, secrets: config.secrets }),
      // Biology sources, paced by counters every worker shares.
      ...createBiologyActivities({ db, objects, config: config.biology, counters: createCounters(sourcePacing) }),
    },
  });
  // Lone runs' workflows; every api process polls their queue too (deploy/api.ts).
  const runs = await Worker.create(runWorkerOptions({ connection, namespace: config.temporal.namespace, db, maxConcurrentRuns: config.limits.concurrentRunsPerAccount, workflowBundle: config.worker.workflowBundle }));
  // One activity worker per compute profile this machine serves (GPU profiles are served
  // by GPU machines; without one, such runs fail with capacity_unavailable).
  // Runs fork from warm parents of their key, and PEtab calibrations' runs from warm
  // instances of the engine; one parent per execution slot of a key, all within one bound.
  const warm = createWarmParents({
    max: config.worker.warmParents.max, perKey: COMPUTE_SLOTS, idleSeconds: config.worker.warmParents.idleSeconds, coldSeconds: 60,
    onError: (key, err) => log.warn({ key, err: String(err) }, 'a warm parent (of runs, or of the PEtab engine) did not start; what it would serve executes cold for a minute'),
  });
  const executionDeps = { db, objects, python: config.python, environments: config.environments, sandbox, runCancels, stallSeconds: config.worker.labStallSeconds, warm };
  const lone = createExecutionActivities(executionDeps);
  const execution = { ...lone, ...createBatchActivities({ db: executionDeps.db, maxConcurrentRuns: config.limits.concurrentRunsPerAccount, executeRun: (runId, labDone) => executeRun(executionDeps, runId, labDone), loneRuns }) };
  // PEtab problems are inspected where labs run: sandboxed, in the toolkit.
  const petab = createPetabActivities({ objects, sandbox, environments: config.environments, warm });
  const compute = await Promise.all(profiles.map((p) => Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: computeTaskQueue(p),
    activities: { ...execution, ...publication, ...hosting, ...petab },
    maxConcurrentActivityTaskExecutions: COMPUTE_SLOTS,
    // SIGTERM drains: running labs get this long to finish; then they are stopped and
    // their runs rescheduled on another worker (not cancelled, no attempt used).
    shutdownGraceTime: `${config.worker.shutdownGraceSeconds} seconds`,
    // Cancellation reaches an activity with its next heartbeat: keep that prompt.
    maxHeartbeatThrottleInterval: '1 second',
  })));
  // Ready deployments held by this process, one long activity each, on queues of their
  // own: they never take the slots lab executions run in.
  const serving = await Promise.all(profiles.map((p) => Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: servingTaskQueue(p),
    activities: { serveDeployment: invocations.serveDeployment },
    maxConcurrentActivityTaskExecutions: 100,
    shutdownGraceTime: `${config.worker.shutdownGraceSeconds} seconds`,
  })));
  const host = profiles.length ? [await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: hostQueue,
    activities: invocations,
    // Each invocation has a warm instance to itself; the pools bound how many run at once.
    maxConcurrentActivityTaskExecutions: 32,
    maxHeartbeatThrottleInterval: '1 second',
    shutdownGraceTime: `${config.worker.shutdownGraceSeconds} seconds`,
  })] : [];
  const workers = [control, runs, ...compute, ...serving, ...host];
  log.info({ taskQueues: [CONTROL_TASK_QUEUE, RUN_TASK_QUEUE, ...profiles.map(computeTaskQueue), ...(host.length ? [hostQueue] : [])] }, 'worker started');
  const dispatcher = await startWebhookDispatcher({ db, client, databaseUrl: config.databaseUrl, baseUrl: config.baseUrl, config: config.webhooks, log });
  const recovery = startInvocationRecovery({ db, client, baseUrl: config.baseUrl, log });
  const health = config.worker.healthPort === null ? null : await startWorkerHealth(config.worker.healthPort, workers, registry);
  const stop = () => workers.forEach((w) => w.shutdown());
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await Promise.all(workers.map((w) => w.run()));
  await dispatcher.stop();
  await recovery.stop();
  health?.close();
  runCancels?.close();
  invocationCancels?.close();
  await warm.close();
  await Promise.allSettled([connection.close(), clientConnection.close(), cancelNotices?.close(), db.destroy(), sourcePacing.end()]);
  log.info('worker stopped');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

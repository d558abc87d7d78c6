import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import pino from 'pino';
import { loadConfig } from '../api/config.ts';
import { createDb } from '../storage/db/knex.ts';
import { createMaintenanceActivities } from '../activities/maintenance.ts';
import { CONTROL_TASK_QUEUE } from '../workflows/constants.ts';

/**
 * The worker process: hosts every workflow and the control-queue activities, with their
 * dependencies built once here and injected.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.logLevel, base: { process: 'worker' } });
  Runtime.install({ telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } } });
  const db = createDb(config.databaseUrl);
  const connection = await NativeConnection.connect({ address: config.temporal.address });
  const worker = await Worker.create({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: CONTROL_TASK_QUEUE,
    workflowsPath: fileURLToPath(new URL('../workflows/index.ts', import.meta.url)),
    activities: { ...createMaintenanceActivities({ db, idempotencyTtlSeconds: config.limits.idempotencyTtlSeconds }) },
  });
  log.info({ taskQueue: CONTROL_TASK_QUEUE }, 'worker started');
  const stop = () => worker.shutdown();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await worker.run();
  await Promise.allSettled([connection.close(), db.destroy()]);
  log.info('worker stopped');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

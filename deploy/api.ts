import pino from 'pino';
import { NativeConnection, Runtime, DefaultLogger, makeTelemetryFilterString } from '@temporalio/worker';
import { loadConfig } from '../kernel/config.ts';
import { startApi } from '../api/server.ts';
import { createTemporalGateway } from '../api/temporal.ts';
import { RUN_TASK_QUEUE } from '../kernel/workflowNames.ts';
import { startRunWorker } from './runWorker.ts';

/**
 * The api process: the HTTP api, and beside it a worker of lone runs' workflows sharing
 * the api's Temporal connection, so a run the api accepts starts eagerly: Temporal hands
 * its first workflow task back with the start, to this process, with no trip through
 * matching (docs/decisions.md: eager starts).
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.logLevel, base: { process: 'api' } });
  Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) } } });
  const timeoutMs = config.dependencyTimeoutMs;
  // One connection, opened when first needed and again after a failure to open it; an
  // attempt that has not answered in 2 s fails (and is closed should it answer later).
  let opening: Promise<NativeConnection> | undefined;
  const connect = () => {
    if (opening) return opening;
    const attempt = NativeConnection.connect({ address: config.temporal.address });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Temporal at ${config.temporal.address} did not answer in 2 s`)), Math.min(timeoutMs, 2000));
    });
    opening = Promise.race([attempt, late]).finally(() => clearTimeout(timer)).catch((err) => {
      opening = undefined;
      void attempt.then((c) => c.close(), () => undefined);
      throw err;
    });
    return opening;
  };
  const temporal = createTemporalGateway({ ...config.temporal, timeoutMs, eager: { connect, taskQueues: [RUN_TASK_QUEUE] } });
  const api = await startApi(config, log, temporal);
  const runs = startRunWorker({ connect, namespace: config.temporal.namespace, db: api.db, maxConcurrentRuns: config.limits.concurrentRunsPerAccount, workflowBundle: config.worker.workflowBundle, log });
  const stop = async (signal: string) => {
    log.info({ signal }, 'api stopping');
    await api.stop();
    // Runs this process holds move to another worker (their next task after 2 s at most).
    await runs.stop();
    await temporal.close();
    await opening?.then((c) => c.close(), () => undefined);
    await api.release();
    process.exit(0);
  };
  const stopOn = (signal: string) => () => void stop(signal).catch((err: unknown) => {
    log.error({ err }, 'api did not stop cleanly');
    process.exit(1);
  });
  process.once('SIGTERM', stopOn('SIGTERM'));
  process.once('SIGINT', stopOn('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

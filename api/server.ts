import { createServer } from 'node:http';
import pino from 'pino';
import { loadConfig } from '../kernel/config.ts';
import { createApp } from './app.ts';
import { metricsApp } from './metricsServer.ts';
import { createDb, createPgPool } from '../storage/db/knex.ts';
import { createObjectStore } from '../storage/objects.ts';
import { createDirectDownloads } from '../storage/directDownloads.ts';
import { paymentProvider } from '../kernel/payments.ts';
import { createTemporalGateway } from './temporal.ts';
import { AUTH_CHANNEL, createKeyResolver } from '../storage/db/keyCache.ts';
import { createNotificationListener } from '../storage/db/notifications.ts';
import { RUN_EVENTS_CHANNEL, createRunEventWatcher } from '../storage/db/runEventWatch.ts';
import { readRuntimeLock } from '../storage/runtimePins.ts';

/** The api process: builds its dependencies once from the environment and listens. */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.logLevel, base: { process: 'api' } });
  const timeoutMs = config.dependencyTimeoutMs;
  const db = createDb(config.databaseUrl, { poolMax: 20, timeoutMs });
  const pool = createPgPool(config.databaseUrl, 10, { timeoutMs });
  const objects = createObjectStore(config.s3, { timeoutMs });
  const temporal = createTemporalGateway({ ...config.temporal, timeoutMs });
  const listener = await createNotificationListener(config.databaseUrl, [AUTH_CHANNEL, RUN_EVENTS_CHANNEL]);
  const keys = createKeyResolver(db, listener);
  const runEvents = createRunEventWatcher(listener);
  const direct = config.directDownloads.endpoint ? createDirectDownloads(config.s3, config.directDownloads.endpoint, config.directDownloads.expiresSeconds) : null;
  const app = createApp({ config, db, pool, objects, directDownloads: direct, payments: paymentProvider(config.payments), temporal, keys, runEvents, runtimeLock: readRuntimeLock() }, { log });
  const server = createServer(app.koa.callback());
  server.keepAliveTimeout = 65000;
  // An accept that fails (out of file descriptors under a burst) loses that connection, not
  // the process; failing to listen at all still ends it.
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.syscall === 'accept') log.error({ err }, 'could not accept a connection');
    else throw err;
  });
  server.listen(config.apiPort, config.apiHost, () => log.info({ url: config.baseUrl }, 'api listening'));
  const metrics = config.metricsPort === null ? null : createServer(metricsApp(app.registry).callback());
  metrics?.listen(config.metricsPort!, config.apiHost, () => log.info({ port: config.metricsPort }, 'metrics listening'));
  const stop = async (signal: string) => {
    log.info({ signal }, 'api stopping');
    // Leave the balancer's rotation first (it checks /readyz; new requests go elsewhere
    // once it has seen this replica fail), then stop accepting.
    app.drain();
    if (config.drainMs > 0) await new Promise((r) => setTimeout(r, config.drainMs));
    // Finish requests in flight (up to 10 s), then release the pools they use.
    const drained = new Promise((resolve) => server.close(resolve));
    metrics?.close();
    server.closeIdleConnections();
    const force = setTimeout(() => server.closeAllConnections(), 10_000);
    await drained;
    clearTimeout(force);
    await Promise.allSettled([listener.close(), temporal.close()]);
    await Promise.allSettled([db.destroy(), pool.end()]);
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

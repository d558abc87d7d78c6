import { RuntimeJudge } from './workspaces/runtimeJudge.ts';
import { createServer } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../kernel/config.ts';
import { createApp } from './app.ts';
import { metricsApp } from './metricsServer.ts';
import { createDb, createPgPool } from '../storage/db/knex.ts';
import { createObjectStore } from '../storage/objects.ts';
import { createDirectDownloads } from '../storage/directDownloads.ts';
import { paymentProvider } from '../kernel/payments.ts';
import type { TemporalGateway } from './temporal.ts';
import type { Db } from '../storage/db/knex.ts';
import { AUTH_CHANNEL, createKeyResolver } from '../storage/db/keyCache.ts';
import { createNotificationListener } from '../storage/db/notifications.ts';
import { RUN_EVENTS_CHANNEL, createNoticeWatcher } from '../storage/db/noticeWatch.ts';
import { INVOCATION_ENDINGS_CHANNEL } from '../storage/db/hostedInvocations.ts';
import { readRuntimeLock } from '../storage/runtimePins.ts';
import { PROFILES_CHANNEL, createProfileResolver } from '../storage/db/computeProfiles.ts';
import { RELEASES_CHANNEL, createReleaseResolver } from '../storage/db/releases.ts';

export interface ApiServer {
  /** The api's Postgres (a run worker beside it uses the same pool). */
  db: Db;
  /** Leaves the balancer's rotation and finishes requests in flight (up to 10 s). */
  stop(): Promise<void>;
  /** Releases its Postgres pools, once nothing uses them (a run worker beside it included); Temporal's gateway is the caller's. */
  release(): Promise<void>;
}

/** The api: builds its dependencies once from the configuration and listens (deploy/api.ts runs it). */
export async function startApi(config: Config, log: Logger, temporal: TemporalGateway): Promise<ApiServer> {
  const timeoutMs = config.dependencyTimeoutMs;
  const db = createDb(config.databaseUrl, { poolMax: 20, timeoutMs });
  const pool = createPgPool(config.databaseUrl, 10, { timeoutMs });
  const objects = createObjectStore(config.s3, { timeoutMs });
  const listener = await createNotificationListener(config.databaseUrl, [AUTH_CHANNEL, RUN_EVENTS_CHANNEL, INVOCATION_ENDINGS_CHANNEL, PROFILES_CHANNEL, RELEASES_CHANNEL]);
  const keys = createKeyResolver(db, listener);
  const runtimeJudge = new RuntimeJudge(config.python);
  const direct = config.directDownloads.endpoint ? createDirectDownloads(config.s3, config.directDownloads.endpoint, config.directDownloads.expiresSeconds) : null;
  const app = createApp({ config, db, pool, objects, directDownloads: direct, payments: paymentProvider(config.payments), temporal, keys, profiles: createProfileResolver(db, listener), releases: createReleaseResolver(db, listener),
    runEvents: createNoticeWatcher(listener, RUN_EVENTS_CHANNEL), invocationEndings: createNoticeWatcher(listener, INVOCATION_ENDINGS_CHANNEL), runtimeLock: readRuntimeLock(), runtimeJudge }, { log });
  const server = createServer(app.koa.callback());
  server.keepAliveTimeout = 65000;
  // An accept that fails (out of file descriptors under a burst) loses that connection, not
  // the process; failing to listen at all still ends it.
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (err.syscall === 'accept') log.error({ err }, 'could not accept a connection');
    else throw err;
  });
  server.listen(config.apiPort, config.apiHost, () => log.info({ url: config.baseUrl, node: process.versions.node }, 'api listening'));
  const metrics = config.metricsPort === null ? null : createServer(metricsApp(app.registry).callback());
  metrics?.on('error', (err) => log.error({ err }, 'metrics listener failed'));
  metrics?.listen(config.metricsPort!, config.apiHost, () => log.info({ port: config.metricsPort }, 'metrics listening'));
  return {
    db,
    async stop() {
      // Leave the balancer's rotation first (it checks /readyz; new requests go elsewhere
      // once it has seen this replica fail), then stop accepting.
      app.drain();
      if (config.drainMs > 0) await new Promise((r) => setTimeout(r, config.drainMs));
      const drained = new Promise((resolve) => server.close(resolve));
      metrics?.close();
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), 10_000);
      await drained;
      clearTimeout(force);
      await app.close().catch(() => undefined);
      await listener.close().catch(() => undefined);
      runtimeJudge.close();
    },
    async release() {
      await Promise.allSettled([db.destroy(), pool.end()]);
    },
  };
}

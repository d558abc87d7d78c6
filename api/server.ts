import { createServer } from 'node:http';
import pino from 'pino';
import { loadConfig } from './config.ts';
import { createApp } from './app.ts';
import { createDb } from '../storage/db/knex.ts';
import { createObjectStore } from '../storage/objects.ts';
import { createTemporalGateway } from './temporal.ts';

/** The api process: builds its dependencies once from the environment and listens. */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.logLevel, base: { process: 'api' } });
  const db = createDb(config.databaseUrl, { poolMax: 20 });
  const objects = createObjectStore(config.s3);
  const temporal = createTemporalGateway(config.temporal);
  const app = createApp({ config, db, objects, temporal }, { log });
  const server = createServer(app.koa.callback());
  server.keepAliveTimeout = 65000;
  server.listen(config.apiPort, config.apiHost, () => log.info({ url: config.baseUrl }, 'api listening'));
  const stop = async (signal: string) => {
    log.info({ signal }, 'api stopping');
    server.close();
    server.closeAllConnections();
    await Promise.allSettled([db.destroy(), temporal.close()]);
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { migrationSource } from './migrations/index.ts';

// int8 columns hold micro-dollars and counters; they stay far below 2^53, so reading them
// as numbers is exact and spares every caller a string conversion.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Knex;

/**
 * Deadlines for a process that must answer (the api, workers): connecting, taking a pooled
 * connection and each query. A Postgres that stops answering then fails a call in seconds
 * instead of holding it forever.
 */
export interface PgDeadlines { timeoutMs?: number }

function connectionOf(databaseUrl: string, d: PgDeadlines) {
  return d.timeoutMs ? { connectionString: databaseUrl, connectionTimeoutMillis: d.timeoutMs, query_timeout: d.timeoutMs } : { connectionString: databaseUrl };
}

/** Opens a pooled knex instance on Postgres. */
export function createDb(databaseUrl: string, opts: { poolMax?: number } & PgDeadlines = {}): Db {
  return knexFactory({
    client: 'pg',
    connection: connectionOf(databaseUrl, opts),
    pool: { min: 0, max: opts.poolMax ?? 10 },
    ...(opts.timeoutMs ? { acquireConnectionTimeout: opts.timeoutMs } : {}),
    migrations: { migrationSource, tableName: 'knex_migrations' },
  });
}

/** Brings the schema to the newest migration; safe to call from several processes. */
export async function migrate(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}

/**
 * A plain pg pool beside knex, for the statements on every request's path (rate limits):
 * there, knex's per-statement acquire/release costs more than the statement itself.
 */
export function createPgPool(databaseUrl: string, max = 10, d: PgDeadlines = {}): pg.Pool {
  const pool = new pg.Pool({ ...connectionOf(databaseUrl, d), max });
  // An idle connection that Postgres drops (a restart, a failover) is an 'error' event on
  // the pool: pg removes the client either way, and with no listener it would end the process.
  pool.on('error', () => undefined);
  return pool;
}

/** One round trip to Postgres (readiness). */
export async function pingDb(db: Db): Promise<void> {
  await db.raw('select 1');
}

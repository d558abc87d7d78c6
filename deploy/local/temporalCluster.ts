import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import getPort, { portNumbers } from 'get-port';
import pg from 'pg';
import { stringify } from 'yaml';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import { waitFor, type Supervised, type Supervisor } from './processes.ts';
import { fairSharesOf } from './fairShares.ts';
import { ensureSearchAttributes } from './searchAttributes.ts';
import { temporalServes } from './dependencies.ts';

const run = promisify(execFile);

/** The services of a Temporal cluster, each its own process as in a deployment. */
export const TEMPORAL_SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type TemporalService = typeof TEMPORAL_SERVICES[number];

/**
 * History shards: fixed for the life of a cluster (it cannot be changed once the
 * database holds workflows). Four fit two cores; docs/scaling.md says what a larger
 * deployment takes.
 */
export const HISTORY_SHARDS = 4;

export interface TemporalClusterOptions {
  serverBin: string;
  sqlToolBin: string;
  dataDir: string;
  /** The Postgres the cluster persists to (and indexes visibility in): host, port, a superuser. */
  postgres: { host: string; port: number; user: string };
  frontendPort: number;
  namespace: string;
  log: (line: string) => void;
}

export interface TemporalCluster {
  address: string;
  /** Each service's process, by name (for restarts and CPU accounting). */
  services: Record<TemporalService, Supervised>;
  /** Where each service serves its Prometheus metrics. */
  metrics: Record<TemporalService, string>;
  /** Starts one service again after it ended (a restart or a rollout). */
  restart(service: TemporalService): Promise<Supervised>;
}

/** Creates the persistence and visibility databases once and brings their schemas to the binary's version. */
async function prepareSchemas(o: TemporalClusterOptions): Promise<void> {
  const conn = { host: o.postgres.host, port: o.postgres.port, user: o.postgres.user, database: 'postgres' };
  const client = new pg.Client(conn);
  await client.connect();
  let existing: Set<string>;
  try {
    existing = new Set((await client.query('SELECT datname FROM pg_database')).rows.map((r) => r.datname as string));
  } finally {
    await client.end();
  }
  for (const [db, schema] of [['temporal', 'postgresql/v12/temporal'], ['temporal_visibility', 'postgresql/v12/visibility']] as const) {
    const tool = (args: string[]) => run(o.sqlToolBin, ['--plugin', 'postgres12', '--ep', o.postgres.host, '-p', String(o.postgres.port), '-u', o.postgres.user, '--db', db, ...args], { maxBuffer: 16 << 20 });
    if (!existing.has(db)) {
      o.log(`creating Temporal's ${db} database`);
      await tool(['create-database']);
      await tool(['setup-schema', '-v', '0.0']);
    }
    await tool(['update-schema', '--schema-name', schema]);
  }
}

/** The server's static configuration: Postgres for both stores, one port set per service. */
async function writeConfig(o: TemporalClusterOptions, dir: string, ports: Record<TemporalService, { grpc: number; membership: number; metrics: number }>, fair: Array<[string, boolean | number]>): Promise<void> {
  const store = (database: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12', databaseName: database, connectAddr: `${o.postgres.host}:${o.postgres.port}`, connectProtocol: 'tcp',
      user: o.postgres.user, password: '', maxConns, maxIdleConns: maxConns, maxConnLifetime: '1h',
    },
  });
  const config = {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'default', visibilityStore: 'visibility', numHistoryShards: HISTORY_SHARDS,
      datastores: { default: store('temporal', 20), visibility: store('temporal_visibility', 10) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: Object.fromEntries(TEMPORAL_SERVICES.map((s) => [s, {
      rpc: { grpcPort: ports[s].grpc, membershipPort: ports[s].membership, bindOnIP: '127.0.0.1' },
      metrics: { prometheus: { framework: 'tally', timerType: 'histogram', listenAddress: `127.0.0.1:${ports[s].metrics}` } },
    }])),
    clusterMetadata: {
      enableGlobalNamespace: false, failoverVersionIncrement: 10, masterClusterName: 'active', currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${o.frontendPort}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: path.join(dir, 'dynamicconfig.yaml'), pollInterval: '10s' },
  };
  // Search attributes registered a moment ago must be usable at once (the tests start
  // workflows right after the stack is up); tasks are handed out by fair shares, as the
  // dev server's are; everything else keeps Temporal's defaults.
  const dynamic = {
    'system.forceSearchAttributesCacheRefreshOnRead': [{ value: true }],
    'frontend.enableUpdateWorkflowExecution': [{ value: true }],
    ...Object.fromEntries(fair.map(([key, value]) => [key, [{ value }]])),
  };
  await writeFile(path.join(dir, 'config', 'cluster.yaml'), stringify(config));
  await writeFile(path.join(dir, 'dynamicconfig.yaml'), stringify(dynamic));
}

/** Registers the namespace and our search attributes (each once). */
async function registerNamespace(address: string, namespace: string): Promise<void> {
  const conn = await Connection.connect({ address });
  try {
    try {
      await conn.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') });
    } catch (err) {
      if ((err as { code?: number }).code !== 6) throw err; // ALREADY_EXISTS
    }
    await ensureSearchAttributes(conn, namespace);
  } finally {
    await conn.close();
  }
}

/** Whether something accepts TCP connections on a local port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A Temporal cluster as a deployment runs one: the server built from its Go module,
 * history, matching, frontend and worker as separate processes that find each other
 * through membership, persistence and visibility on Postgres (search attributes
 * included). Resolves once the namespace and its search attributes are usable.
 */
export async function startTemporalCluster(sup: Supervisor, o: TemporalClusterOptions): Promise<TemporalCluster> {
  const dir = path.join(o.dataDir, 'temporal-cluster');
  const fresh = !existsSync(path.join(dir, 'config'));
  await mkdir(path.join(dir, 'config'), { recursive: true });
  const fair = await fairSharesOf(dir, fresh, o.log);
  await prepareSchemas(o);
  // Temporal records its services' ports in a smallint column: each must be below 32768.
  if (o.frontendPort >= 32768) throw new Error(`the Temporal frontend port ${o.frontendPort} must be below 32768 (Temporal stores service ports as smallint)`);
  const low = () => getPort({ port: portNumbers(20000, 32767) });
  const ports = Object.fromEntries(await Promise.all(TEMPORAL_SERVICES.map(async (s) => [s, {
    grpc: s === 'frontend' ? o.frontendPort : await low(), membership: await low(), metrics: await low(),
  }]))) as Record<TemporalService, { grpc: number; membership: number; metrics: number }>;
  await writeConfig(o, dir, ports, fair);
  const start = (service: TemporalService) => sup.start(`t-${service}`, o.serverBin, ['--root', dir, '--config', 'config', '--env', 'cluster', '--allow-no-auth', 'start', '--service', service], {
    env: { PATH: process.env.PATH ?? '', HOME: dir },
  });
  const services = {} as Record<TemporalService, Supervised>;
  const dead = () => {
    for (const s of TEMPORAL_SERVICES) if (services[s] && services[s].child.exitCode !== null) return `temporal ${s} exited with ${services[s].child.exitCode}`;
    return undefined;
  };
  // On a new database every service writes the cluster's metadata record as it starts,
  // and those that lose the race exit: history goes first and the rest start once it
  // listens (its record written), as a Kubernetes deployment gets by restarting pods.
  services.history = start('history');
  await waitFor('temporal history', () => listening(ports.history.grpc), 120000, dead);
  for (const s of TEMPORAL_SERVICES) if (s !== 'history') services[s] = start(s);
  const address = `127.0.0.1:${o.frontendPort}`;
  await temporalServes(address, dead);
  await registerNamespace(address, o.namespace);
  return {
    address,
    services,
    metrics: Object.fromEntries(TEMPORAL_SERVICES.map((s) => [s, `http://127.0.0.1:${ports[s].metrics}/metrics`])) as Record<TemporalService, string>,
    async restart(service) {
      services[service] = start(service);
      return services[service];
    },
  };
}

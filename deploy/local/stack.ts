import { mkdir, readFile, writeFile, chmod } from 'node:fs/promises';
import { ensurePrerequisites, stackPrerequisites } from './prerequisites.ts';
import path from 'node:path';
import { createDb } from '../../storage/db/knex.ts';
import { createObjectStore } from '../../storage/objects.ts';
import { cacheDir, resolveBinary } from './binaries.ts';
import { pythonTool } from './pythonTools.ts';
import { discoverPythons, pythonsSetting } from './interpreters.ts';
import { RESOLVER_LOCK_FILE } from '../../kernel/environments.ts';
import { startPostgres } from './postgres.ts';
import { startTemporal } from './temporal.ts';
import { startMinio } from './minio.ts';
import { MOCK_SECRET_KEY, startPaymentProvider } from './paymentProvider.ts';
import { Supervisor, waitFor, assertPortsFree, type LogSink, type Supervised } from './processes.ts';
import { startTemporalCluster, type TemporalCluster } from './temporalCluster.ts';
import { startTemporalUi } from './temporalUi.ts';
import { restartable, respawnWith, temporalServes, type Dependency, type DependencyName } from './dependencies.ts';
import { startBalancer } from './balancer.ts';
import getPort from 'get-port';
import { bootstrap, REPO_ROOT } from './bootstrap.ts';
import { ensureSandboxTool } from './sandboxTool.ts';
import { ensureAnalysisEnv, ensurePetabEnv, ensureRuntime } from './runtime.ts';
import { buildWorkflowBundle } from '../workflowBundle.ts';
import { createTemporalGateway } from '../../api/temporal.ts';
import { CONTROL_TASK_QUEUE, RUN_TASK_QUEUE } from '../../kernel/workflowNames.ts';
import { SERVICE_PROCESS_ENV, serviceArgs } from './serviceProcess.ts';
import { ensureSecretsKey } from './secretsKey.ts';
import { createSandbox } from '../../activities/execution/sandbox.ts';
import { LOCAL_STACK_MARKER, sandboxSettings } from '../../kernel/config.ts';
import { workerMachine, type WorkerMachine } from './machines.ts';

export interface StackPorts { api: number; postgres: number; temporal: number; temporalUi: number | null; minio: number; minioConsole: number }

export interface StackOptions {
  dataDir: string;
  ports: StackPorts;
  /** Test stacks trade durability for speed (SQLite and Postgres without fsync). */
  mode: 'dev' | 'test';
  sink: LogSink;
  /** Extra environment for the api and worker (limits for tests, log level...). */
  serviceEnv?: Record<string, string>;
  /** Stop the stack and exit when this process gets SIGINT, SIGTERM or SIGHUP (tests, benchmarks). */
  exitOnSignal?: boolean;
  /**
   * `single` (default): Temporal's dev server on SQLite, one api, one worker. `cluster`:
   * the Temporal server's services on Postgres, MinIO erasure-coded over four drives, two
   * api replicas behind HAProxy (on `ports.api`), two workers, each a machine of its own
   * (deploy/local/machines.ts).
   */
  topology?: 'single' | 'cluster';
  /** Extra `-c` settings for a Postgres the stack starts itself (a benchmark's pg_stat_statements). */
  postgresSettings?: string[];
  /** Extra Node options for the api and worker processes (a benchmark's `--cpu-prof`, which NODE_OPTIONS may not carry). */
  serviceNodeArgs?: string[];
}

/** One api or worker process of the stack, which a test or a rollout may replace. */
export interface Replica {
  name: string;
  proc: Supervised;
  /** The replica's own HTTP port: an api's listener (behind the balancer), a worker's probes. */
  port: number;
  /** Starts it again (after it was stopped or killed), resolved once it is ready. */
  restart(): Promise<void>;
  /** A cluster worker's machine: its own disk, scratch and caches (deploy/local/machines.ts). */
  machine?: WorkerMachine;
}

export interface StackInfo {
  base_url: string;
  api_key: string;
  key_id: string;
  account_id: string;
  namespace: string;
  docs_url: string;
  openapi_url: string;
  temporal_address: string;
  temporal_ui_url: string | null;
  minio_endpoint: string;
  minio_console_url: string;
  database_url: string;
  /** The mock payment provider's address and the secret its events are signed with (null with a provider key of one's own). */
  stripe_mock_url: string | null;
  stripe_webhook_secret: string | null;
}

export interface Stack {
  info: StackInfo;
  /** Environment that points a process at this stack (DATABASE_URL, TEMPORAL_ADDRESS, S3_*, ...). */
  env: Record<string, string>;
  supervisor: Supervisor;
  /** Paths of the server binaries the stack resolved. */
  binaries: { temporal: string; minio: string };
  apis: Replica[];
  workers: Replica[];
  /** The cluster topology's Temporal services (null on the dev server). */
  temporalCluster: TemporalCluster | null;
  /**
   * The servers the service depends on, to take down and bring back (a soak's outages);
   * Temporal's is its frontend in the cluster topology. Empty for a DATABASE_URL of someone else's.
   */
  dependencies: Partial<Record<DependencyName, Dependency>>;
  stop(): Promise<void>;
}

const S3_ACCESS = 'silico';
const S3_SECRET = 'silico-local-secret';

/** The environment that points a process (api, worker, test, CLI) at a local stack. */
async function stackEnv(s: { databaseUrl: string; temporalAddress: string; temporalUiUrl: string | null; minioEndpoint: string; apiPort: number; python: string; analysisPython: string; petabPython: string; dataDir: string }): Promise<Record<string, string>> {
  return {
    // The marker of this stack's api and worker (and of the tests it serves): only they may
    // use the test-only settings and plain-http webhook endpoints (kernel/config.ts). No
    // image or manifest in deploy/docker and deploy/k8s sets it.
    [LOCAL_STACK_MARKER]: '1',
    DATABASE_URL: s.databaseUrl,
    TEMPORAL_ADDRESS: s.temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_UI_URL: s.temporalUiUrl ?? '',
    S3_ENDPOINT: s.minioEndpoint,
    S3_ACCESS_KEY_ID: S3_ACCESS,
    S3_SECRET_ACCESS_KEY: S3_SECRET,
    S3_BUCKET: 'silico',
    // Clients on this machine reach MinIO where the services do: downloads may be presigned URLs of it.
    SILICO_DIRECT_DOWNLOAD_ENDPOINT: s.minioEndpoint,
    SILICO_API_PORT: String(s.apiPort),
    SILICO_BASE_URL: `http://localhost:${s.apiPort}/v1`,
    SILICO_PYTHON: s.python,
    // Studies' samples, indices and optimizer (activities/studies/analysis.lock).
    SILICO_ANALYSIS_PYTHON: s.analysisPython,
    // The PEtab toolkit's runtime (activities/petab/toolkit.lock), which imported problems' labs run in.
    SILICO_PETAB_PYTHON: s.petabPython,
    // The passport keyring of this data dir (bootstrap makes its first key).
    SILICO_PASSPORT_KEYS_DIR: path.join(s.dataDir, 'passport-keys'),
    // Seals the secrets kept in Postgres (webhook signing secrets); made once per data dir.
    SILICO_SECRETS_KEY: await ensureSecretsKey(s.dataDir),
    // Lab environments: resolved and installed by uv, on the Pythons this machine has, kept
    // in the per-user cache by lock digest (shared by every stack of this user).
    SILICO_UV: await pythonTool(RESOLVER_LOCK_FILE, 'uv'),
    SILICO_PYTHONS: pythonsSetting(await discoverPythons()),
    SILICO_ENVIRONMENTS_DIR: path.join(cacheDir(), 'environments'),
    // Node's compile cache for every process that points at a stack (api, worker, test
    // files, CLI): each start after the first reads its modules' code compiled, about a
    // fifth of a start (bench:loader). Keyed by each file's contents, so an edit recompiles it.
    NODE_COMPILE_CACHE: path.join(cacheDir(), 'node-compile-cache'),
  };
}

/**
 * A stack `npm start` is running from `dataDir` (its local.json, its api ready), as
 * startStack would return it to a client: its info and environment. Null when none is up.
 */
export async function runningStack(dataDir: string): Promise<{ info: StackInfo; env: Record<string, string>; binaries: { temporal: string } } | null> {
  let info: StackInfo;
  try {
    info = JSON.parse(await readFile(path.join(dataDir, 'local.json'), 'utf8')) as StackInfo;
    if (!(await fetch(info.base_url.replace(/\/v1$/, '/readyz'), { signal: AbortSignal.timeout(2000) })).ok) return null;
  } catch {
    return null;
  }
  const say = () => undefined;
  const [python, analysisPython, petabPython, temporal] = await Promise.all([ensureRuntime(say), ensureAnalysisEnv(say), ensurePetabEnv(say), resolveBinary('temporal', say)]);
  const env = await stackEnv({ databaseUrl: info.database_url, temporalAddress: info.temporal_address, temporalUiUrl: info.temporal_ui_url, minioEndpoint: info.minio_endpoint,
    apiPort: Number(new URL(info.base_url).port), python, analysisPython, petabPython, dataDir });
  if (info.stripe_mock_url) Object.assign(env, { SILICO_STRIPE_SECRET_KEY: MOCK_SECRET_KEY, SILICO_STRIPE_API_BASE: info.stripe_mock_url });
  if (info.stripe_webhook_secret) env.SILICO_STRIPE_WEBHOOK_SECRET = info.stripe_webhook_secret;
  return { info, env, binaries: { temporal } };
}

/**
 * Brings the whole service up in order: binaries, Postgres, MinIO and Temporal (in
 * parallel), bootstrap (schema, bucket, skills, operator key, schedules), then worker
 * and api, each waited for. `npm start` and `npm test` both use this.
 */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const say = (l: string) => opts.sink('stack', l);
  await mkdir(opts.dataDir, { recursive: true });
  // The postgres user must be able to reach its folder inside ours.
  await chmod(opts.dataDir, 0o755);
  const sup = new Supervisor(opts.sink, { exitOnSignal: opts.exitOnSignal });
  const fast = opts.mode === 'test';
  // Tests and benchmarks always run on a database of their own: a DATABASE_URL in the
  // environment is someone's database, never to be migrated or written by a test.
  const pgEnv = fast ? { ...process.env, DATABASE_URL: undefined } : process.env;
  try {
    await ensurePrerequisites(await stackPrerequisites({ ...process.env, ...opts.serviceEnv }, !pgEnv.DATABASE_URL), say);
    const cluster = opts.topology === 'cluster';
    // Without a provider key of its own, the stack buys from the provider's mock server.
    const mockPayments = !{ ...process.env, ...opts.serviceEnv }.SILICO_STRIPE_SECRET_KEY;
    const [temporalBin, minioBin, python, analysisPython, petabPython, , clusterBins, stripeMockBin] = await Promise.all([
      resolveBinary('temporal', say), resolveBinary('minio', say), ensureRuntime(say), ensureAnalysisEnv(say), ensurePetabEnv(say), ensureSandboxTool(say, { ...process.env, ...opts.serviceEnv }),
      cluster ? Promise.all([resolveBinary('temporal-server', say), resolveBinary('temporal-sql-tool', say), opts.ports.temporalUi === null ? undefined : resolveBinary('temporal-ui-server', say)]) : undefined,
      mockPayments ? resolveBinary('stripe-mock', say) : undefined,
    ]);
    await assertPortsFree([
      { port: opts.ports.api, what: 'api', envVar: 'SILICO_API_PORT' },
      ...(pgEnv.DATABASE_URL ? [] : [{ port: opts.ports.postgres, what: 'Postgres', envVar: 'SILICO_PG_PORT' }]),
      { port: opts.ports.temporal, what: 'Temporal', envVar: 'TEMPORAL_PORT' },
      ...(opts.ports.temporalUi === null ? [] : [{ port: opts.ports.temporalUi, what: 'Temporal UI', envVar: 'TEMPORAL_UI_PORT' }]),
      { port: opts.ports.minio, what: 'MinIO', envVar: 'MINIO_PORT' },
      { port: opts.ports.minioConsole, what: 'MinIO console', envVar: 'MINIO_CONSOLE_PORT' },
    ]);
    say(`starting postgres, minio and temporal${cluster ? ' (cluster topology)' : ''}`);
    const minioStarted = startMinio(sup, { bin: minioBin, dataDir: opts.dataDir, port: opts.ports.minio, consolePort: opts.ports.minioConsole, accessKey: S3_ACCESS, secretKey: S3_SECRET, drives: cluster ? 4 : undefined });
    let pg: Awaited<ReturnType<typeof startPostgres>>;
    let temporal: { address: string; uiUrl: string | null; proc?: Supervised };
    let temporalCluster: TemporalCluster | null = null;
    if (cluster) {
      // Temporal persists to the same Postgres (its own two databases), so it waits for it.
      pg = await startPostgres(sup, { dataDir: opts.dataDir, port: opts.ports.postgres, fast, log: say, env: pgEnv, settings: opts.postgresSettings });
      const u = new URL(pg.url);
      temporalCluster = await startTemporalCluster(sup, {
        serverBin: clusterBins![0], sqlToolBin: clusterBins![1], dataDir: opts.dataDir, frontendPort: opts.ports.temporal, namespace: 'default', log: say,
        postgres: { host: u.hostname, port: Number(u.port), user: decodeURIComponent(u.username) },
      });
      const ui = clusterBins![2] && opts.ports.temporalUi !== null
        ? await startTemporalUi(sup, { bin: clusterBins![2], dataDir: opts.dataDir, port: opts.ports.temporalUi, temporalAddress: temporalCluster.address, namespace: 'default' })
        : undefined;
      temporal = { address: temporalCluster.address, uiUrl: ui?.url ?? null };
    } else {
      [pg, temporal] = await Promise.all([
        startPostgres(sup, { dataDir: opts.dataDir, port: opts.ports.postgres, fast, log: say, env: pgEnv, settings: opts.postgresSettings }),
        startTemporal(sup, { bin: temporalBin, dataDir: opts.dataDir, port: opts.ports.temporal, uiPort: opts.ports.temporalUi, namespace: 'default', fast, log: say }),
      ]);
    }
    const minio = await minioStarted;
    const dependencies: Stack['dependencies'] = {
      object_store: restartable('object_store', minio.proc, { stopSignal: 'SIGTERM', ready: minio.ready, respawn: respawnWith(sup) }),
      temporal: temporalCluster
        ? restartable('temporal', temporalCluster.services.frontend, { stopSignal: 'SIGTERM', ready: () => temporalServes(temporal.address), respawn: () => temporalCluster!.restart('frontend') })
        : restartable('temporal', temporal.proc!, { stopSignal: 'SIGTERM', ready: () => temporalServes(temporal.address), respawn: respawnWith(sup) }),
    };
    if (pg.server) dependencies.postgres = restartable('postgres', pg.server.proc, { stopSignal: 'SIGINT', ready: pg.server.ready, respawn: respawnWith(sup) });
    const env = await stackEnv({ databaseUrl: pg.url, temporalAddress: temporal.address, temporalUiUrl: temporal.uiUrl, minioEndpoint: minio.endpoint, apiPort: opts.ports.api, python, analysisPython, petabPython, dataDir: opts.dataDir });
    const baseUrl = env.SILICO_BASE_URL!;
    if (stripeMockBin) Object.assign(env, await startPaymentProvider(sup, { bin: stripeMockBin, dataDir: opts.dataDir }));
    Object.assign(env, opts.serviceEnv);
    const db = createDb(pg.url, { poolMax: 2 });
    const stateFile = path.join(opts.dataDir, 'local.json');
    let boot;
    try {
      boot = await bootstrap({ db, objects: createObjectStore({ endpoint: minio.endpoint, region: 'us-east-1', accessKeyId: S3_ACCESS, secretAccessKey: S3_SECRET, bucket: 'silico' }), temporalAddress: temporal.address, namespace: 'default', stateFile, python, passportKeysDir: env.SILICO_PASSPORT_KEYS_DIR!, log: say,
        // The built-in labs are packed sandboxed like any lab, before any worker takes a sandbox uid.
        sandbox: createSandbox(sandboxSettings({ ...process.env, ...opts.serviceEnv })),
      });
    } finally {
      await db.destroy();
    }
    // Bundled once (Temporal's production pattern): every worker of the stack, and every
    // worker a test starts on it, loads the file instead of running webpack on its start.
    env.SILICO_WORKFLOW_BUNDLE = await buildWorkflowBundle(path.join(opts.dataDir, 'workflow-bundle.js'));
    const childEnv = { ...process.env, ...SERVICE_PROCESS_ENV, ...env };
    const node = (name: string, script: string, extra: Record<string, string> = {}, machine?: WorkerMachine) => {
      const { command, args } = machine ? machine.wrap(process.execPath, serviceArgs(script, opts.serviceNodeArgs)) : { command: process.execPath, args: serviceArgs(script, opts.serviceNodeArgs) };
      return sup.start(name, command, args, { cwd: REPO_ROOT, env: { ...childEnv, ...machine?.env, ...extra } });
    };
    const procs: Supervised[] = [];
    const dead = () => {
      for (const p of procs) if (p.child.exitCode !== null) return `${p.name} exited with ${p.child.exitCode}`;
      return undefined;
    };
    const gateway = createTemporalGateway({ address: temporal.address, namespace: 'default' });
    // Each replica is ready when its own /readyz says so (an api: its dependencies; a
    // worker: every Temporal worker in it polling), as Kubernetes probes them.
    const ready = (r: Pick<Replica, 'name' | 'port'>) => waitFor(r.name, async () => (await fetch(`http://127.0.0.1:${r.port}/readyz`)).ok, 120000, dead);
    const replica = (name: string, script: string, port: number, machine?: WorkerMachine): Replica => {
      const worker = script === 'deploy/worker.ts';
      // Behind the balancer an api trusts its X-Forwarded-For (one proxy hop).
      const start = () => node(name, script, worker ? { SILICO_WORKER_HEALTH_PORT: String(port) } : { SILICO_API_PORT: String(port), ...(cluster ? { SILICO_TRUSTED_PROXY_HOPS: '1' } : {}) }, machine);
      const r: Replica = {
        name, port, proc: start(), machine,
        async restart() {
          procs.splice(procs.indexOf(r.proc), 1);
          r.proc = start();
          procs.push(r.proc);
          await ready(r);
        },
      };
      procs.push(r.proc);
      return r;
    };
    let apis: Replica[];
    let workers: Replica[];
    // Kept for the stack's life: a replica started again waits on it to be ready.
    try {
      const n = cluster ? 2 : 1;
      const workerPorts = await Promise.all(Array.from({ length: n }, () => getPort()));
      // The cluster's workers share no disk: each is a machine of its own.
      const uids = sandboxSettings(childEnv);
      const machines = cluster ? await Promise.all(workerPorts.map((_, i) => workerMachine(opts.dataDir, i, n, { base: uids.uidBase, count: uids.uidCount }))) : [];
      workers = workerPorts.map((port, i) => replica(machines[i]?.name ?? 'worker', 'deploy/worker.ts', port, machines[i]));
      const apiPorts = cluster ? await Promise.all(Array.from({ length: n }, () => getPort())) : [opts.ports.api];
      apis = apiPorts.map((port, i) => replica(cluster ? `api-${i + 1}` : 'api', 'deploy/api.ts', port));
      for (const a of apis) await ready(a);
      if (cluster) await startBalancer(sup, { dataDir: opts.dataDir, port: opts.ports.api, backends: apis.map((a) => ({ name: a.name, port: a.port })), log: say });
      for (const w of workers) await ready(w);
      // Temporal sees the workers' polls too before the stack is reported up.
      await waitFor('worker', async () => await gateway.hasPoller(CONTROL_TASK_QUEUE, 'workflow') && gateway.hasPoller(RUN_TASK_QUEUE, 'workflow'), 120000, dead);
    } catch (err) {
      await gateway.close();
      throw err;
    }
    const info: StackInfo = {
      base_url: baseUrl,
      api_key: boot.apiKey,
      key_id: boot.keyId,
      account_id: boot.accountId,
      namespace: 'local',
      docs_url: `http://localhost:${opts.ports.api}/docs`,
      openapi_url: `${baseUrl}/openapi.json`,
      temporal_address: temporal.address,
      temporal_ui_url: temporal.uiUrl,
      minio_endpoint: minio.endpoint,
      minio_console_url: minio.consoleUrl,
      database_url: pg.url,
      stripe_mock_url: env.SILICO_STRIPE_API_BASE ?? null,
      stripe_webhook_secret: env.SILICO_STRIPE_WEBHOOK_SECRET ?? null,
    };
    await writeFile(stateFile, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
    return { info, env, supervisor: sup, binaries: { temporal: temporalBin, minio: minioBin }, apis, workers, temporalCluster, dependencies,
      stop: async () => {
        await gateway.close();
        await sup.stopAll();
      },
    };
  } catch (err) {
    await sup.stopAll(3000);
    throw err;
  }
}

import { secretsKeyring, type SecretsKeyring } from './sealedSecrets.ts';
import { parsePythons, type EnvironmentSettings } from './environments.ts';
import type { SandboxSettings } from './sandboxSettings.ts';

/**
 * Configuration, read once from the environment and passed down. Nothing else in the
 * code reads process.env for service settings.
 */
export interface Config {
  /** Public base URL of the API including `/v1`. */
  baseUrl: string;
  apiHost: string;
  apiPort: number;
  /** When set, /metrics is served on this port only (an ops port kept off the public one). */
  metricsPort: number | null;
  /** Proxies in front of the api whose X-Forwarded-For is trusted (0: the socket's address is the client's). */
  trustedProxyHops: number;
  databaseUrl: string;
  temporal: { address: string; namespace: string; uiUrl: string };
  s3: { endpoint: string; region: string; accessKeyId: string; secretAccessKey: string; bucket: string };
  limits: {
    readsPerMinute: number;
    runCreationPerMinute: number;
    dailyRequests: number;
    pageDefault: number;
    pageMax: number;
    bodyBytes: number;
    uploadBytes: number;
    idempotencyTtlSeconds: number;
    idempotencyLockSeconds: number;
    concurrentRunsPerAccount: number;
  };
  /** Deadline of every call to Postgres, Temporal and the object store (SILICO_DEPENDENCY_TIMEOUT_SECONDS). */
  dependencyTimeoutMs: number;
  /**
   * On SIGTERM, how long the api answers /readyz 503 while still serving before it stops
   * accepting (SILICO_DRAIN_MS): at least the balancer's time to take it out of rotation.
   */
  drainMs: number;
  logLevel: string;
  /** Interpreter of the lab runtime environment (workers only). */
  python: string;
  /** Interpreter of the analysis environment of studies: SALib, Optuna (workers only; activities/studies/analysis.lock). */
  analysisPython: string;
  /** Lab environments: the resolver, the index, the provided Pythons, where builds are kept. */
  environments: EnvironmentSettings;
  /** How lab processes are sandboxed (workers only; activities/execution/sandbox.ts). */
  sandbox: SandboxSettings;
  passports: {
    /** The keyring of Ed25519 signing keys, `<key_id>.pem` each (workers sign; null: none configured). */
    keysDir: string | null;
    /** How long GET /passports waits for a passport's build before answering 503. */
    buildTimeoutMs: number;
  };
  /** The approved biology sources (workers reach them; the api names them). */
  biology: BiologyConfig;
  webhooks: WebhookConfig;
  /**
   * The key that seals secrets the service keeps readable (webhook signing secrets) in
   * Postgres, and keys kept from before a rotation (SILICO_SECRETS_KEY, required;
   * SILICO_SECRETS_KEY_PREVIOUS, comma-separated).
   */
  secrets: SecretsKeyring;
  /** Buying compute through the payment provider (Stripe). */
  payments: PaymentsConfig;
  directDownloads: {
    /**
     * The object store's address as clients reach it (SILICO_DIRECT_DOWNLOAD_ENDPOINT): set,
     * downloads may be answered with a presigned URL of the store (`?redirect=1`, and
     * `direct_download` beside `download_url`); null, the api relays every download.
     */
    endpoint: string | null;
    /** How long a presigned URL works (SILICO_DIRECT_DOWNLOAD_SECONDS). */
    expiresSeconds: number;
  };
  sessions: {
    /** Past this many history events a session's workflow continues as a new run (SILICO_SESSION_HISTORY_BOUND). */
    historyBound: number;
  };
  worker: {
    /** Pre-built workflow bundle; absent means bundle the sources on start (tests). */
    workflowBundle?: string;
    /** Compute profiles whose queues this worker serves. */
    computeProfiles: string[];
    /** On SIGTERM, how long running labs may finish before they are stopped and rescheduled. */
    shutdownGraceSeconds: number;
    /**
     * A lab that sends nothing (its driver heartbeats every 2 s) for this long while stopped
     * or using no CPU is ended `lab_unresponsive`; below the execution's heartbeat timeout.
     */
    labStallSeconds: number;
    /**
     * Warm parents of runs (activities/execution/warmParents.ts): at most `max` on this
     * worker (0: every run executes cold), each stopped once unused for `idleSeconds`.
     */
    warmParents: { max: number; idleSeconds: number };
    /** Port of the worker's `/healthz` and `/readyz` (deploy/workerHealth.ts); null: none. */
    healthPort: number | null;
  };
}

export interface PaymentsConfig {
  /** The provider's secret key (SILICO_STRIPE_SECRET_KEY); null: buying is not offered (503). */
  stripeSecretKey: string | null;
  /** The secret the provider signs its events with (SILICO_STRIPE_WEBHOOK_SECRET); null: events are refused. */
  stripeWebhookSecret: string | null;
  /** Another address of the provider's API (SILICO_STRIPE_API_BASE, local stack only: its stripe-mock); null: Stripe's own. */
  stripeApiBase: string | null;
  /** How long a checkout may be paid before the purchase expires (SILICO_PURCHASE_EXPIRY_SECONDS). */
  purchaseExpirySeconds: number;
  /** Where the provider's checkout page sends the buyer back to (SILICO_PURCHASE_RETURN_URL). */
  returnUrl: string;
}

export type BiologySourceId = 'uniprot' | 'pdb' | 'ncbi_nucleotide';
export const BIOLOGY_SOURCE_IDS: readonly BiologySourceId[] = ['uniprot', 'pdb', 'ncbi_nucleotide'];

/** One approved source: where its APIs are (every host it may be reached on), and its bounds. */
export interface BiologySource {
  id: BiologySourceId;
  title: string;
  /** Base URLs by role (a source may serve search, data and files from different hosts). */
  urls: Record<string, string>;
  timeoutMs: number;
  maxRecordBytes: number;
  /** Requests per second to the source, counted across every worker. */
  requestsPerSecond: number;
}

export interface BiologyConfig {
  sources: Record<BiologySourceId, BiologySource>;
  /**
   * Whether sources may resolve to private or loopback addresses: only the test
   * configuration, whose sources are a local fixture server (SILICO_BIOLOGY_ALLOW_PRIVATE=1,
   * honoured only in the local stack).
   */
  allowPrivateAddresses: boolean;
}

/** What a webhook endpoint's URL may be (webhookUrlRules). */
export interface WebhookUrlRules {
  /** Private, loopback or link-local addresses: only the test configuration (SILICO_WEBHOOK_ALLOW_PRIVATE=1 in the local stack). */
  allowPrivateAddresses: boolean;
  /** Plain `http:`: only in the local stack; anywhere else an endpoint must be `https:`. */
  allowHttp: boolean;
}

/**
 * Webhook deliveries: an attempt counts when the endpoint answers 2xx within `timeoutMs`;
 * failures are retried from `firstRetryMs`, doubling up to `maxRetryMs`, for `retryForMs`
 * (24 hours), then the delivery is dead-lettered. Endpoints may be private or loopback
 * addresses only in the test configuration, and plain http only in the local stack.
 */
export interface WebhookConfig extends WebhookUrlRules {
  timeoutMs: number;
  firstRetryMs: number;
  maxRetryMs: number;
  retryForMs: number;
}

/** The registry: the sources' real public APIs unless a deployment (or the tests) points them elsewhere. */
function biologyConfig(env: NodeJS.ProcessEnv): BiologyConfig {
  const timeoutMs = int(env, 'SILICO_BIOLOGY_TIMEOUT_SECONDS', 15) * 1000;
  const maxRecordBytes = int(env, 'SILICO_BIOLOGY_MAX_RECORD_BYTES', 50 * 1024 * 1024);
  return {
    sources: {
      uniprot: {
        id: 'uniprot', title: 'UniProt (UniProtKB)', urls: { rest: str(env, 'SILICO_BIOLOGY_UNIPROT_URL', 'https://rest.uniprot.org') },
        timeoutMs, maxRecordBytes, requestsPerSecond: int(env, 'SILICO_BIOLOGY_UNIPROT_RPS', 10),
      },
      pdb: {
        id: 'pdb', title: 'RCSB Protein Data Bank',
        urls: {
          search: str(env, 'SILICO_BIOLOGY_PDB_SEARCH_URL', 'https://search.rcsb.org/rcsbsearch/v2'),
          data: str(env, 'SILICO_BIOLOGY_PDB_DATA_URL', 'https://data.rcsb.org'),
          files: str(env, 'SILICO_BIOLOGY_PDB_FILES_URL', 'https://files.rcsb.org'),
        },
        timeoutMs, maxRecordBytes, requestsPerSecond: int(env, 'SILICO_BIOLOGY_PDB_RPS', 10),
      },
      ncbi_nucleotide: {
        // E-utilities allow 3 requests per second without an API key.
        id: 'ncbi_nucleotide', title: 'NCBI Nucleotide (E-utilities)', urls: { eutils: str(env, 'SILICO_BIOLOGY_NCBI_URL', 'https://eutils.ncbi.nlm.nih.gov/entrez/eutils') },
        timeoutMs, maxRecordBytes, requestsPerSecond: int(env, 'SILICO_BIOLOGY_NCBI_RPS', 3),
      },
    },
    allowPrivateAddresses: isLocalStack(env) && env.SILICO_BIOLOGY_ALLOW_PRIVATE === '1',
  };
}

/**
 * The marker of the stack deploy/local starts: deploy/local/stack.ts sets it on the api
 * and worker it launches (and hands it to the tests it serves). Nothing in deploy/docker
 * or deploy/k8s sets it (test/unit/manifests.test.ts holds them to that).
 */
export const LOCAL_STACK_MARKER = 'SILICO_LOCAL_STACK';

/**
 * Test-only settings: they loosen what the service reaches, for the local stack's own
 * fixtures (its biology fixture server, webhook receivers on loopback). Outside the local
 * stack a process that has one set (to anything but empty or `0`) refuses to start.
 */
export const LOCAL_STACK_ONLY = ['SILICO_WEBHOOK_ALLOW_PRIVATE', 'SILICO_BIOLOGY_ALLOW_PRIVATE', 'SILICO_STRIPE_API_BASE'] as const;

/** Whether the environment is the local stack's (its marker set). */
export function isLocalStack(env: NodeJS.ProcessEnv = process.env): boolean {
  return env[LOCAL_STACK_MARKER] === '1';
}

/** Throws, naming it, when a test-only setting is set outside the local stack. */
export function refuseLocalStackOnly(env: NodeJS.ProcessEnv = process.env): void {
  if (isLocalStack(env)) return;
  for (const name of LOCAL_STACK_ONLY) {
    const v = env[name];
    if (v !== undefined && v !== '' && v !== '0') {
      throw new Error(`${name} is a test-only setting, honoured only in the stack deploy/local starts (npm start, npm test); this process is not part of it. Remove ${name} from its environment.`);
    }
  }
}

/** What a webhook endpoint's URL may be in this environment (the api's and the operator CLI's rule); refuses a test-only setting outside the local stack. */
export function webhookUrlRules(env: NodeJS.ProcessEnv = process.env): WebhookUrlRules {
  refuseLocalStackOnly(env);
  const local = isLocalStack(env);
  return { allowPrivateAddresses: local && env.SILICO_WEBHOOK_ALLOW_PRIVATE === '1', allowHttp: local };
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return n;
}

function str(env: NodeJS.ProcessEnv, name: string, fallback?: string): string {
  const v = env[name];
  if (v !== undefined && v !== '') return v;
  if (fallback === undefined) throw new Error(`${name} is required`);
  return fallback;
}

/** The passport keyring (SILICO_PASSPORT_KEYS_DIR), also read by the operator CLI, which needs no other setting. */
export function passportKeysDir(env: NodeJS.ProcessEnv = process.env): string | null {
  return env.SILICO_PASSPORT_KEYS_DIR || null;
}

/**
 * The secrets keyring of an environment, or null when it names no key (the operator CLI
 * then uses the local stack's); a malformed key throws.
 */
export function secretsKeyringOf(env: NodeJS.ProcessEnv = process.env): SecretsKeyring | null {
  if (!env.SILICO_SECRETS_KEY) return null;
  return secretsKeyring(env.SILICO_SECRETS_KEY, (env.SILICO_SECRETS_KEY_PREVIOUS ?? '').split(',').filter((k) => k.trim()));
}

/** How lab processes are sandboxed, also for the local tooling that packs labs outside a worker. */
export function sandboxSettings(env: NodeJS.ProcessEnv = process.env): Config['sandbox'] {
  return {
    bwrap: str(env, 'SILICO_SANDBOX_BWRAP', 'bwrap'),
    unsafeNoSandbox: env.SILICO_UNSAFE_NO_SANDBOX === '1',
    uidBase: int(env, 'SILICO_SANDBOX_UID_BASE', 61000),
    uidCount: int(env, 'SILICO_SANDBOX_UID_COUNT', 1000),
    filterPython: str(env, 'SILICO_SANDBOX_FILTER_PYTHON', '/usr/bin/python3'),
  };
}

/** Buying compute: the provider's keys, and the mock provider's address in the local stack alone. */
export function paymentsConfig(env: NodeJS.ProcessEnv, apiPort: number): PaymentsConfig {
  return {
    stripeSecretKey: env.SILICO_STRIPE_SECRET_KEY || null,
    stripeWebhookSecret: env.SILICO_STRIPE_WEBHOOK_SECRET || null,
    stripeApiBase: isLocalStack(env) ? env.SILICO_STRIPE_API_BASE || null : null,
    purchaseExpirySeconds: int(env, 'SILICO_PURCHASE_EXPIRY_SECONDS', 24 * 3600),
    returnUrl: str(env, 'SILICO_PURCHASE_RETURN_URL', `http://localhost:${apiPort}/console/`),
  };
}

/** Builds the configuration from an environment (defaults match `npm start`). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // A deployment with a test-only setting fails at start, naming it, rather than run loosened.
  refuseLocalStackOnly(env);
  const apiPort = int(env, 'SILICO_API_PORT', 8080);
  const apiHost = str(env, 'SILICO_API_HOST', '127.0.0.1');
  return {
    baseUrl: str(env, 'SILICO_BASE_URL', `http://localhost:${apiPort}/v1`),
    apiHost,
    apiPort,
    metricsPort: env.SILICO_METRICS_PORT ? int(env, 'SILICO_METRICS_PORT', 0) : null,
    trustedProxyHops: int(env, 'SILICO_TRUSTED_PROXY_HOPS', 0),
    databaseUrl: str(env, 'DATABASE_URL'),
    temporal: {
      address: str(env, 'TEMPORAL_ADDRESS', '127.0.0.1:7233'),
      namespace: str(env, 'TEMPORAL_NAMESPACE', 'default'),
      uiUrl: str(env, 'TEMPORAL_UI_URL', 'http://localhost:8233'),
    },
    s3: {
      endpoint: str(env, 'S3_ENDPOINT', 'http://127.0.0.1:9000'),
      region: str(env, 'S3_REGION', 'us-east-1'),
      // No default: a deployment that forgot its credentials fails at start, never runs
      // on the local stack's (npm start and the tests set them).
      accessKeyId: str(env, 'S3_ACCESS_KEY_ID'),
      secretAccessKey: str(env, 'S3_SECRET_ACCESS_KEY'),
      bucket: str(env, 'S3_BUCKET', 'silico'),
    },
    limits: {
      readsPerMinute: int(env, 'SILICO_RATE_READS_PER_MIN', 600),
      runCreationPerMinute: int(env, 'SILICO_RATE_RUNS_PER_MIN', 60),
      dailyRequests: int(env, 'SILICO_RATE_DAILY', 20000),
      pageDefault: 20,
      pageMax: 100,
      bodyBytes: int(env, 'SILICO_MAX_JSON_BYTES', 1024 * 1024),
      uploadBytes: int(env, 'SILICO_MAX_UPLOAD_BYTES', 256 * 1024 * 1024),
      idempotencyTtlSeconds: 24 * 3600,
      idempotencyLockSeconds: int(env, 'SILICO_IDEMPOTENCY_LOCK_SECONDS', 60),
      concurrentRunsPerAccount: int(env, 'SILICO_CONCURRENT_RUNS', 4),
    },
    dependencyTimeoutMs: int(env, 'SILICO_DEPENDENCY_TIMEOUT_SECONDS', 10) * 1000,
    drainMs: int(env, 'SILICO_DRAIN_MS', 2000),
    logLevel: str(env, 'LOG_LEVEL', 'info'),
    python: str(env, 'SILICO_PYTHON', 'python3'),
    analysisPython: str(env, 'SILICO_ANALYSIS_PYTHON', 'python3'),
    environments: {
      uv: str(env, 'SILICO_UV', 'uv'),
      indexUrl: str(env, 'SILICO_PACKAGE_INDEX_URL', 'https://pypi.org/simple'),
      indexHosts: (env.SILICO_PACKAGE_INDEX_HOSTS ?? '').split(',').map((h) => h.trim()).filter(Boolean),
      pythons: parsePythons(env.SILICO_PYTHONS ?? ''),
      dir: str(env, 'SILICO_ENVIRONMENTS_DIR', '/var/lib/silico/environments'),
      maxBytes: int(env, 'SILICO_ENVIRONMENTS_MAX_BYTES', 20 * 2 ** 30),
      buildMaxBytes: int(env, 'SILICO_ENVIRONMENT_BUILD_MAX_BYTES', 4 * 2 ** 30),
      timeoutSeconds: int(env, 'SILICO_ENVIRONMENT_BUILD_SECONDS', 900),
      toolkitPython: env.SILICO_PETAB_PYTHON || null,
    },
    sandbox: sandboxSettings(env),
    sessions: { historyBound: int(env, 'SILICO_SESSION_HISTORY_BOUND', 2000) },
    payments: paymentsConfig(env, apiPort),
    directDownloads: {
      endpoint: env.SILICO_DIRECT_DOWNLOAD_ENDPOINT || null,
      expiresSeconds: int(env, 'SILICO_DIRECT_DOWNLOAD_SECONDS', 300),
    },
    passports: {
      keysDir: passportKeysDir(env),
      buildTimeoutMs: int(env, 'SILICO_PASSPORT_BUILD_TIMEOUT_SECONDS', 60) * 1000,
    },
    biology: biologyConfig(env),
    // No default: a deployment without its key fails at start rather than store secrets readable.
    secrets: secretsKeyringOf(env) ?? secretsKeyring(str(env, 'SILICO_SECRETS_KEY')),
    webhooks: {
      ...webhookUrlRules(env),
      timeoutMs: int(env, 'SILICO_WEBHOOK_TIMEOUT_MS', 10_000),
      firstRetryMs: int(env, 'SILICO_WEBHOOK_FIRST_RETRY_MS', 10_000),
      maxRetryMs: int(env, 'SILICO_WEBHOOK_MAX_RETRY_MS', 3_600_000),
      retryForMs: int(env, 'SILICO_WEBHOOK_RETRY_FOR_MS', 24 * 3_600_000),
    },
    worker: {
      workflowBundle: env.SILICO_WORKFLOW_BUNDLE || undefined,
      computeProfiles: str(env, 'SILICO_COMPUTE_PROFILES', 'cpu-small,cpu-standard').split(',').map((p) => p.trim()).filter(Boolean),
      shutdownGraceSeconds: int(env, 'SILICO_WORKER_SHUTDOWN_GRACE_SECONDS', 30),
      labStallSeconds: int(env, 'SILICO_LAB_STALL_SECONDS', 10),
      warmParents: { max: int(env, 'SILICO_WARM_PARENTS', 4), idleSeconds: int(env, 'SILICO_WARM_PARENT_IDLE_SECONDS', 60) },
      healthPort: env.SILICO_WORKER_HEALTH_PORT ? int(env, 'SILICO_WORKER_HEALTH_PORT', 0) : null,
    },
  };
}

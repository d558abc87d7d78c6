/**
 * The Silico client: configuration read once, one HttpClient shared by every resource,
 * and the one-call `run()` for the common "run this lab and give me its results".
 */
import { HttpClient } from './core/http.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './core/retry.ts';
import { SilicoError } from './errors.ts';
import type { Run, RunResults } from './models.ts';
import type { RunHandle } from './runHandle.ts';
import type { WithEnvelope } from './types.ts';
import { Account } from './resources/account.ts';
import { Biology } from './resources/biology.ts';
import { Capabilities } from './resources/capabilities.ts';
import { ComputeProfiles } from './resources/computeProfiles.ts';
import { Datasets } from './resources/datasets.ts';
import { Experiments } from './resources/experiments.ts';
import { Passports } from './resources/passports.ts';
import { Files } from './resources/files.ts';
import { HostedInvocations } from './resources/hostedInvocations.ts';
import { CREATION_WAIT_SECONDS, waitSecondsWithin } from './core/preferWait.ts';
import { Hosting } from './resources/hosting.ts';
import { Hub } from './resources/hub.ts';
import { Labs } from './resources/labs.ts';
import { Publications } from './resources/publications.ts';
import { Runs, type RunStartOptions } from './resources/runs.ts';
import { Sessions } from './resources/sessions.ts';
import { Skills } from './resources/skills.ts';
import { Workspaces } from './resources/workspaces.ts';
import { Petab } from './resources/petab.ts';
import { Webhooks } from './resources/webhooks.ts';
import { Purchases } from './resources/purchases.ts';

export const SDK_VERSION = '0.1.0';

export interface ClientOptions {
  /** `sk_...`; default: the SILICO_API_KEY environment variable. */
  apiKey?: string;
  /** Ends in `/v1`; default: the SILICO_BASE_URL environment variable. */
  baseUrl?: string;
  /** Retries of a retryable failure after the first attempt (default 3; 0 disables). */
  maxRetries?: number;
  /** Per attempt, until the answer arrives (default 60 000). */
  timeoutMs?: number;
  /** Backoff tuning (see RetryPolicy). */
  retry?: Partial<Omit<RetryPolicy, 'maxRetries'>>;
  /** A fetch implementation (default: Node's global fetch). */
  fetch?: typeof globalThis.fetch;
  userAgent?: string;
}

/** `client.run()` options: a direct run request, plus how long to wait for it. */
export interface RunOptions extends RunStartOptions {
  /** Give up waiting after this long with RunTimeout (the run goes on). Default: no limit. */
  timeoutMs?: number;
  pollIntervalMs?: number;
}

/** What `client.run()` resolves with. */
export interface RunOutcome {
  run: WithEnvelope<Run>;
  results: WithEnvelope<RunResults>;
  handle: RunHandle;
}

export class Silico {
  readonly baseUrl: string;
  readonly runs: Runs;
  readonly capabilities: Capabilities;
  readonly hub: Hub;
  readonly biology: Biology;
  readonly labs: Labs;
  readonly workspaces: Workspaces;
  readonly petab: Petab;
  readonly computeProfiles: ComputeProfiles;
  readonly experiments: Experiments;
  readonly passports: Passports;
  readonly publications: Publications;
  readonly hosting: Hosting;
  readonly hostedInvocations: HostedInvocations;
  readonly files: Files;
  readonly datasets: Datasets;
  readonly account: Account;
  readonly skills: Skills;
  readonly sessions: Sessions;
  readonly webhooks: Webhooks;
  /** Buying compute (a key with the compute:buy scope). */
  readonly purchases: Purchases;

  /** Each request's own timeout: a creation that waits for its run must answer within it. */
  private readonly requestTimeoutMs: number;

  constructor(options: ClientOptions = {}) {
    // No `process` in a browser (the console passes both options).
    const env = typeof process === 'undefined' ? {} : process.env;
    const apiKey = options.apiKey ?? env.SILICO_API_KEY;
    const baseUrl = options.baseUrl ?? env.SILICO_BASE_URL;
    if (!apiKey) throw new SilicoError('No API key: pass `apiKey` or set SILICO_API_KEY.');
    if (!baseUrl) throw new SilicoError('No base URL: pass `baseUrl` (ending in /v1) or set SILICO_BASE_URL.');
    if (!/^https?:\/\//.test(baseUrl)) throw new SilicoError(`baseUrl must be an http(s) URL, got ${JSON.stringify(baseUrl)}.`);
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.requestTimeoutMs = options.timeoutMs ?? 60_000;
    const http = new HttpClient({
      apiKey,
      baseUrl: this.baseUrl,
      timeoutMs: this.requestTimeoutMs,
      retry: { ...DEFAULT_RETRY_POLICY, ...options.retry, maxRetries: options.maxRetries ?? DEFAULT_RETRY_POLICY.maxRetries },
      // Called unbound: a browser's fetch must not be called as a method of another object.
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      userAgent: options.userAgent ?? (typeof process === 'undefined' ? undefined : `silico-sdk-node/${SDK_VERSION} node/${process.versions.node}`),
    });
    this.runs = new Runs(http);
    this.capabilities = new Capabilities(http);
    this.hub = new Hub(http);
    this.biology = new Biology(http);
    this.labs = new Labs(http);
    this.workspaces = new Workspaces(http);
    this.petab = new Petab(http);
    this.computeProfiles = new ComputeProfiles(http);
    this.experiments = new Experiments(http);
    this.passports = new Passports(http);
    this.publications = new Publications(http);
    this.hosting = new Hosting(http);
    this.hostedInvocations = new HostedInvocations(http);
    this.files = new Files(http);
    this.datasets = new Datasets(http);
    this.account = new Account(http);
    this.skills = new Skills(http);
    this.sessions = new Sessions(http);
    this.webhooks = new Webhooks(http);
    this.purchases = new Purchases(http);
  }

  /**
   * Runs `ref` (e.g. `platform/sir-epidemic`, version optional) with the direct form of
   * POST /runs, waits for it, and returns the completed run with its results. Throws
   * RunFailed if it ends failed/cancelled/timed_out, RunTimeout (with a handle) if
   * `timeoutMs` passes first. One idempotency key covers the creation and its retries.
   */
  async run(ref: string, options: RunOptions = {}): Promise<RunOutcome> {
    // A short run is answered ended by its creation; a longer one is followed.
    const waitSeconds = options.waitSeconds ?? waitSecondsWithin(CREATION_WAIT_SECONDS, options.timeoutMs, this.requestTimeoutMs);
    const handle = await this.runs.start(ref, { ...options, waitSeconds });
    const answered = handle.lastSeen as WithEnvelope<Run> | undefined;
    const run = answered?.status === 'completed'
      ? answered
      : await handle.wait({ timeoutMs: options.timeoutMs, pollIntervalMs: options.pollIntervalMs, signal: options.signal });
    const results = await handle.results({ signal: options.signal });
    return { run, results, handle };
  }
}

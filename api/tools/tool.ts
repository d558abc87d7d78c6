import type { RuntimeJudge } from '../workspaces/runtimeJudge.ts';
import type pg from 'pg';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import type { DirectDownloads } from '../../storage/directDownloads.ts';
import type Stripe from 'stripe';
import type { AccountRow } from '../../storage/db/accounts.ts';
import type { ApiKeyRow, Scope } from '../../storage/db/apiKeys.ts';
import type { CapSettings } from '../../storage/db/spendCaps.ts';
import type { Config } from '../../kernel/config.ts';
import type { JsonSchema } from '../schemas/common.ts';
import type { TemporalGateway } from '../temporal.ts';
import type { KeyResolver } from '../../storage/db/keyCache.ts';
import type { ProfileResolver } from '../../storage/db/computeProfiles.ts';
import type { ReleaseResolver } from '../../storage/db/releases.ts';
import type { NoticeWatcher } from '../../storage/db/noticeWatch.ts';
import type { RuntimeLock } from '../../storage/runtimePins.ts';

/** Services an operation may use; injected once by createApp. */
export interface Deps {
  config: Config;
  db: Db;
  /** Plain pool for per-request hot-path statements. */
  pool: pg.Pool;
  objects: ObjectStore;
  /** Presigned downloads straight from the object store, where clients can reach it (null: the api relays every download). */
  directDownloads: DirectDownloads | null;
  /** The payment provider's client (null: buying is not configured, and its routes answer 501). */
  payments: Stripe | null;
  temporal: TemporalGateway;
  keys: KeyResolver;
  /** Compute profiles by id, kept until one changes. */
  profiles: ProfileResolver;
  /** The release a reference names for an account, kept until releases or teams change. */
  releases: ReleaseResolver;
  /** Wakes a run's event streams when an event is appended (Postgres NOTIFY). */
  runEvents: NoticeWatcher;
  /** Wakes the waiters on a hosted invocation when it ends (Postgres NOTIFY). */
  invocationEndings: NoticeWatcher;
  /** The lab runtime's installed set (the committed lock), read once: plan-time pin checks. */
  runtimeLock: RuntimeLock;
  /** The lab runtime's own manifest checks: what it refuses, plans refuse in its words. */
  runtimeJudge: RuntimeJudge;
}

/** Who is calling, resolved from the API key. */
export interface Caller {
  account: AccountRow;
  key: ApiKeyRow;
  /** The caps the account and key are set to, as resolved with the key (absent: read when needed). */
  caps?: CapSettings;
}

export interface ToolContext {
  deps: Deps;
  caller: Caller;
  requestId: string;
  /** The request's idempotency key on the routes that take one (either door), for work that outlives the request. */
  idempotencyKey?: string;
  /**
   * How long an operation that answers with a short workflow's result waits for it (its
   * own default when unset). An MCP task asks for none: it starts the work and reads the
   * result later by repeating the call with the same key.
   */
  waitMs?: number;
  /**
   * This request's count among its key's requests today, as the rate limiter counts it
   * (over REST a read is counted while it runs, so this may still be on its way).
   */
  requestsToday?: () => Promise<number>;
  /** Present when called over REST: the request headers an operation may honour. */
  http?: { accept: string; lastEventId?: string; range?: string; request?: import('node:http').IncomingMessage };
}

/** A suggested next step (the envelope's next_actions item, before the route is filled in). */
export interface NextStep { tool: string; description: string; arguments: Record<string, unknown> }

/**
 * A next step's argument the caller must choose (an idempotency key, an input's value): the
 * argument is named, its value says what to choose. A next step carries every required
 * argument, so an agent can follow it knowing only which of them are placeholders.
 */
export function choose(what: string): string {
  return `<choose: ${what}>`;
}

/** The `idempotency_key` of a next step that takes one: the caller makes it, once per logical request. */
export const NEW_IDEMPOTENCY_KEY = choose('a fresh UUID for this request; send it again only to retry the same call');

/** Whether an argument's value is a placeholder made by `choose`. */
export function isPlaceholder(value: unknown): boolean {
  return typeof value === 'string' && /^<choose: .+>$/s.test(value);
}

export interface ToolResult {
  body: Record<string, unknown>;
  /** REST-only raw answer (bytes or a stream) instead of the JSON envelope. */
  raw?: { body: Buffer | NodeJS.ReadableStream; contentType: string; headers?: Record<string, string>; status?: number };
  warnings?: Array<Record<string, unknown>>;
  next_actions?: NextStep[];
  links?: Record<string, unknown>;
}

/**
 * Where an operation's input comes from over HTTP. MCP sees the union of all three as
 * one argument object; REST validates each part and names the offending field.
 */
export interface ToolInput {
  path?: Record<string, JsonSchema>;
  query?: Record<string, JsonSchema>;
  requiredQuery?: string[];
  /** Query parameters named by pattern, e.g. `metadata[key]`. */
  queryPatterns?: Record<string, JsonSchema>;
  /** A JSON body schema, 'multipart' for a file upload, or absent for no body. */
  body?: JsonSchema | 'multipart';
}

/** One operation: the unit REST routes and MCP tools both call. */
export interface ToolDef {
  name: string;
  description: string;
  scope: Scope | 'any';
  input: ToolInput;
  /**
   * Schema of the tool's own result fields (the envelope is added around them), or
   * `bytes` for a REST-only route that answers the stored bytes themselves.
   */
  output?: JsonSchema | 'bytes';
  readOnly: boolean;
  /**
   * MCP hints for tools that change state (read-only tools are idempotent and never
   * destructive): calling again with the same arguments has no further effect (a plan
   * is consumed once, a cancel is final) ...
   */
  idempotent?: boolean;
  /** ... or the call can end or narrow something that existed (cancel, retire, re-scope). */
  destructive?: boolean;
  /** Reaches sources outside the service. */
  openWorld?: boolean;
  /**
   * Over MCP, the values of optional arguments an agent leaves out, where the operation's
   * own default (REST's) answers more than an agent's context should hold; `tools/list`
   * shows them as the arguments' defaults.
   */
  agentDefaults?: Record<string, unknown>;
  /** Absent while the operation is specified but not built: the route answers 501. */
  handler?: (input: Record<string, any>, ctx: ToolContext) => Promise<ToolResult>;
}

/** The JSON body schema of an operation, if it takes a JSON body (not multipart, not none). */
export function jsonBodySchema(tool: ToolDef): JsonSchema | undefined {
  return tool.input.body && tool.input.body !== 'multipart' ? tool.input.body : undefined;
}

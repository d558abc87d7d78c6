import type { ToolAnswer } from '../call.ts';
import type { Deps, Caller } from '../../tools/tool.ts';

/** A task's status as MCP names it (`input_required` never arises here: nothing waits on the caller). */
export type TaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';

export interface TaskState {
  status: TaskStatus;
  /** Where the work stands, in a line (progress included where the record has it). */
  message: string;
}

/** What a kind may do to read or cancel its work: call a tool of the catalog as the task's caller. */
export interface KindContext {
  call(tool: string, args: Record<string, unknown>): Promise<ToolAnswer>;
  deps: Deps;
  caller: Caller;
  requestId: string;
}

/**
 * A tool that runs as an MCP task: how its answer names the work it started, how that
 * work is read (the REST read of the same record, answered in the same envelope as the
 * tool), what a read says of the task's status (null: a refusal, which the task passes
 * on), how it is cancelled (the REST cancel), and which resource holds its results once
 * it completed.
 */
export interface TaskKind {
  subject(body: Record<string, any>, args: Record<string, unknown>): Record<string, unknown>;
  read(c: KindContext, subject: Record<string, any>): Promise<ToolAnswer>;
  state(answer: ToolAnswer): TaskState | null;
  cancel?(c: KindContext, subject: Record<string, any>): Promise<ToolAnswer>;
  results?(subject: Record<string, any>): string;
  /**
   * For work with no record of its own: the arguments the call is made with (the key that
   * names the work), and that the call starts it without waiting for it.
   */
  detached?: { args(args: Record<string, unknown>, taskId: string): Record<string, unknown> };
}

/** A task's state from a record its read answered; a refusal is not a state. */
const fromRecord = (state: (body: Record<string, any>) => TaskState) => (a: ToolAnswer): TaskState | null => (a.status >= 400 ? null : state(a.body));

const percent = (p: number | null | undefined) => (typeof p === 'number' ? ` (${Math.round(p * 100)}%)` : '');
const ended = (message: string | undefined, fallback: string) => message ?? fallback;

/** A run: run_get reads it, run_cancel cancels it, its results are a resource. */
const run: TaskKind = {
  subject: (b) => ({ run_id: b.id }),
  read: (c, s) => c.call('run_get', s),
  state: fromRecord((b) => {
    switch (b.status) {
      case 'completed': return { status: 'completed', message: `Run ${b.id} completed.` };
      case 'cancelled': return { status: 'cancelled', message: `Run ${b.id} was cancelled.` };
      case 'failed':
      case 'timed_out': return { status: 'failed', message: ended(b.error && `${b.error.code}: ${b.error.message}`, `Run ${b.id} ${b.status}.`) };
      default: return { status: 'working', message: `Run ${b.id} is ${b.status}${percent(b.progress)}.` };
    }
  }),
  cancel: (c, s) => c.call('run_cancel', s),
  results: (s) => `silico://runs/${s.run_id}/results`,
};

/** A study: experiment_get reads it; closing it (its runs cancelled) is its cancel. */
const experiment: TaskKind = {
  subject: (b) => ({ experiment_id: b.id }),
  read: (c, s) => c.call('experiment_get', s),
  state: fromRecord((b) => {
    const t = b.run_totals as Record<'completed' | 'failed' | 'cancelled' | 'timed_out' | 'running' | 'queued' | 'total', number>;
    const done = t.completed + t.failed + t.cancelled + t.timed_out;
    if (b.status === 'completed') return { status: 'completed', message: `All ${t.total} runs ended: ${t.completed} completed, ${t.failed + t.timed_out} failed, ${t.cancelled} cancelled.` };
    if (b.status === 'closed' && b.completed_at) return { status: 'cancelled', message: `The study was closed; ${done} of ${t.total} runs ended.` };
    return { status: 'working', message: `${done} of ${t.total} runs ended (${t.running} running, ${t.queued} queued).` };
  }),
  cancel: (c, s) => c.call('experiment_update', { ...s, status: 'closed', cancel_running: true }),
};

/** A hosted invocation: hosted_invocation_get reads it, hosted_invocation_cancel cancels it. */
const invocation: TaskKind = {
  subject: (b) => ({ invocation_id: b.id }),
  read: (c, s) => c.call('hosted_invocation_get', s),
  state: fromRecord((b) => {
    switch (b.status) {
      case 'completed': return { status: 'completed', message: `Invocation ${b.id} completed.` };
      case 'cancelled': return { status: 'cancelled', message: `Invocation ${b.id} was cancelled.` };
      case 'failed':
      case 'expired': return { status: 'failed', message: ended(b.error && `${b.error.code}: ${b.error.message}`, `Invocation ${b.id} ${b.status}.`) };
      default: return { status: 'working', message: `Invocation ${b.id} is ${b.status}.` };
    }
  }),
  cancel: (c, s) => c.call('hosted_invocation_cancel', s),
};

/** A hosting request: hosting_get reads it; it ends when the lab is ready (or refused). */
const hosting: TaskKind = {
  subject: (b) => ({ lab_id: b.lab_id }),
  read: (c, s) => c.call('hosting_get', s),
  state: fromRecord((b) => {
    switch (b.status) {
      case 'ready':
      case 'paused': return { status: 'completed', message: `The lab is hosted (${b.status}).` };
      case 'failed':
      case 'rejected': return { status: 'failed', message: `The hosting request ${b.status}.` };
      case 'retiring':
      case 'retired': return { status: 'cancelled', message: `The hosting was retired (${b.status}).` };
      case 'awaiting_review': return { status: 'working', message: 'The deployment checks passed; an operator reviews the request.' };
      default: return { status: 'working', message: `The hosting request is ${b.status}.` };
    }
  }),
};

/** A publication: publication_get reads it; it cannot be cancelled (nothing is released until it passes). */
const publication: TaskKind = {
  subject: (b) => ({ publication_id: b.publication_id }),
  read: (c, s) => c.call('publication_get', s),
  state: fromRecord((b) => {
    if (b.status === 'published') return { status: 'completed', message: `${b.reference} is published.` };
    if (b.status === 'failed') return { status: 'failed', message: `Publishing ${b.reference} failed: ${b.error.code}: ${b.error.message}` };
    return { status: 'working', message: `${b.reference} is being packed and smoke-tested.` };
  }),
};

/**
 * A biology fetch has no record of its own until its resources are stored: the task
 * makes the call with a key (the caller's, or one naming the task) without waiting, and
 * reads it by repeating the call with that key, which joins the same fetch and answers
 * its result once it has ended (then from the stored answer), as a REST retry would; a
 * refusal it ends with is the task's failure and its result.
 */
const biologyFetch: TaskKind = {
  detached: { args: (args, taskId) => ({ ...args, idempotency_key: args.idempotency_key ?? `mcp-task-${taskId}` }) },
  subject: (_b, args) => args,
  read: (c, s) => c.call('biology_fetch', s),
  state(a) {
    const code = (a.body.error as { code?: string } | undefined)?.code;
    if (a.status < 400) return { status: 'completed', message: `${(a.body.resources as unknown[]).length} record(s) fetched and stored.` };
    if (code === 'fetch_in_progress' || code === 'idempotency_in_progress') return { status: 'working', message: 'The records are being fetched from the source.' };
    // The fetch ended refused (a record missing, a checksum, the source refusing): the task
    // failed with that answer. A dependency down is the caller's error to retry.
    const error = a.body.error as { code: string; message: string };
    if (a.status < 500 || a.status === 502) return { status: 'failed', message: `${error.code}: ${error.message}` };
    return null;
  },
};

/** The tools that run as tasks, by name. */
export const TASK_KINDS: Readonly<Record<string, TaskKind>> = {
  run_create: run,
  experiment_create: experiment,
  hosted_invocation_execute: invocation,
  hosting_execute: hosting,
  publish_execute: publication,
  biology_fetch: biologyFetch,
};

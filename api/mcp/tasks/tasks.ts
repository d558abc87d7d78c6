import type { CallToolResult, CreateTaskResult, GetTaskResult, ListTasksResult, Task } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError, RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import { answerTool, toolResult, type CallContext, type ToolAnswer } from '../call.ts';
import type { CatalogEntry } from '../catalog.ts';
import { TASK_KINDS, type KindContext, type TaskKind, type TaskState } from './kinds.ts';
import { getMcpTask, insertMcpTask, listMcpTasks, type McpTaskRow } from '../../../storage/db/mcpTasks.ts';
import { decodeCursor, encodeCursor } from '../../pagination.ts';
import { newUuid } from '../../../storage/ids.ts';

/** How long a task is kept when its caller asks for nothing else, and the bounds of what it may ask. */
export const TASK_TTL_MS = { default: 24 * 3600_000, min: 60_000, max: 7 * 24 * 3600_000 };
/** How often a caller is asked to poll `tasks/get`. */
export const TASK_POLL_MS = 1000;
/** How long `tasks/result` waits for a task to end before asking the caller to call again. */
export const TASK_RESULT_WAIT_MS = 50_000;
const TASKS_PAGE = 20;
/**
 * How long a read of a detached kind's work waits for its result: long enough to collect
 * the result of work that has ended, short enough for a poll.
 */
const DETACHED_READ_WAIT_MS = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Where a task stands: its state and the answer of the read it came from. */
interface Reading { state: TaskState; answer: ToolAnswer; at: string }

/** The latest time a record says it changed, for `lastUpdatedAt`. */
function changedAt(body: Record<string, unknown>, fallback: Date): string {
  const times = ['updated_at', 'finished_at', 'completed_at', 'closed_at', 'started_at', 'created_at']
    .map((k) => body[k]).filter((v): v is string => typeof v === 'string').map((v) => Date.parse(v)).filter(Number.isFinite);
  return new Date(Math.max(fallback.getTime(), ...times)).toISOString();
}

function taskOf(row: McpTaskRow, state: TaskState, at: string): Task {
  return {
    taskId: row.id, status: state.status, statusMessage: state.message,
    createdAt: row.created_at.toISOString(), lastUpdatedAt: at, ttl: row.ttl_ms, pollInterval: row.poll_interval_ms,
  };
}

/** A refusal's envelope as an MCP error: the envelope rides as `data`. */
function refusal(answer: ToolAnswer): McpError {
  const error = (answer.body.error ?? {}) as { message?: string };
  return new McpError(answer.status >= 500 ? ErrorCode.InternalError : ErrorCode.InvalidParams, error.message ?? 'The request was refused.', answer.body);
}

const unknownTask = (taskId: string) => new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);

/**
 * MCP tasks over the tools of TASK_KINDS. A task's row (storage/db/mcpTasks.ts) links it
 * to its work; its status, progress and result are read each time from the record the
 * REST routes read, through the same read tool, so any api replica answers for any task
 * and nothing is kept in memory. Tasks are the account's: another account's id is unknown.
 */
export function createTasks(catalog: ReadonlyMap<string, CatalogEntry>, readResource: (uri: string, ctx: CallContext) => Promise<{ contents: unknown[] }>) {
  const kindContext = (ctx: CallContext): KindContext => ({
    deps: ctx.deps, caller: ctx.caller, requestId: ctx.requestId,
    call: (tool, args) => answerTool(catalog.get(tool)!, args, ctx),
  });
  const kindOf = (row: McpTaskRow): TaskKind => TASK_KINDS[row.tool]!;

  async function owned(taskId: string, ctx: CallContext): Promise<McpTaskRow> {
    const row = UUID.test(taskId) ? await getMcpTask(ctx.deps.db, ctx.caller.account.id, taskId) : undefined;
    if (!row) throw unknownTask(taskId);
    return row;
  }

  async function read(row: McpTaskRow, ctx: CallContext): Promise<Reading> {
    if (row.outcome) {
      const body = (row.outcome.structuredContent ?? {}) as { error?: { code?: string; message?: string } };
      return { state: { status: 'failed', message: `${body.error?.code}: ${body.error?.message}` }, answer: { status: 400, body }, at: row.created_at.toISOString() };
    }
    const kind = kindOf(row);
    const answer = await kind.read(kindContext(kind.detached ? { ...ctx, waitMs: DETACHED_READ_WAIT_MS } : ctx), row.subject!);
    const state = kind.state(answer);
    if (!state) throw refusal(answer);
    return { state, answer, at: changedAt(answer.body, row.created_at) };
  }

  return {
    /** Whether a tool runs as a task (its listing says `taskSupport: optional`). */
    supports: (tool: string) => tool in TASK_KINDS,

    /**
     * A task-augmented `tools/call`: the call is made as without a task (a detached kind's
     * without waiting for its work); the task follows the work it started. A call refused
     * before any work began is a failed task whose result is that refusal; one refused for
     * a dependency that is down (5xx) records nothing and is the error itself, so a retry
     * with the same key completes it.
     */
    async create(entry: CatalogEntry, args: Record<string, unknown>, ttl: number | undefined, ctx: CallContext): Promise<CreateTaskResult> {
      const kind = TASK_KINDS[entry.tool.name]!;
      const id = newUuid();
      const callArgs = kind.detached ? kind.detached.args(args, id) : args;
      const answer = await answerTool(entry, callArgs, kind.detached ? { ...ctx, waitMs: 0 } : ctx);
      const state = kind.state(answer);
      if (!state && answer.status >= 500) throw refusal(answer);
      const row = await insertMcpTask(ctx.deps.db, {
        id, account_id: ctx.caller.account.id, tool: entry.tool.name,
        subject: state ? kind.subject(answer.body, callArgs) : null,
        outcome: state ? null : toolResult(answer.body, true) as Record<string, unknown>,
        ttl_ms: Math.min(TASK_TTL_MS.max, Math.max(TASK_TTL_MS.min, ttl ?? TASK_TTL_MS.default)),
        poll_interval_ms: TASK_POLL_MS,
      });
      return { task: taskOf(row, state ?? (await read(row, ctx)).state, changedAt(answer.body, row.created_at)) };
    },

    /** `tasks/get`: the task as its record stands now. */
    async get(taskId: string, ctx: CallContext): Promise<GetTaskResult> {
      const row = await owned(taskId, ctx);
      const r = await read(row, ctx);
      return taskOf(row, r.state, r.at);
    },

    /**
     * `tasks/result`: once the work has ended, what the tool answers for it (the read of
     * its record, in the tool's own envelope), with its results embedded where it has
     * them; before that, it waits for the end (up to TASK_RESULT_WAIT_MS, then asks to be
     * called again).
     */
    async result(taskId: string, ctx: CallContext, signal: AbortSignal): Promise<CallToolResult> {
      const row = await owned(taskId, ctx);
      const deadline = Date.now() + TASK_RESULT_WAIT_MS;
      for (;;) {
        const r = await read(row, ctx);
        if (TERMINAL.has(r.state.status)) {
          const result = row.outcome ? (row.outcome as CallToolResult) : toolResult(r.answer.body, r.answer.status >= 400);
          const uri = r.state.status === 'completed' ? kindOf(row).results?.(row.subject!) : undefined;
          const embedded = uri ? (await readResource(uri, ctx)).contents.map((resource) => ({ type: 'resource' as const, resource })) : [];
          return { ...result, content: [...result.content, ...embedded] as CallToolResult['content'], _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
        }
        if (Date.now() >= deadline || signal.aborted) {
          throw new McpError(ErrorCode.RequestTimeout, `Task ${taskId} is still ${r.state.status}: ${r.state.message} Call tasks/result again, or poll tasks/get.`);
        }
        await new Promise((resolve) => setTimeout(resolve, row.poll_interval_ms));
      }
    },

    /** `tasks/cancel`: the REST cancel of the work; a task that has ended, or whose work cannot be cancelled, is refused. */
    async cancel(taskId: string, ctx: CallContext): Promise<GetTaskResult> {
      const row = await owned(taskId, ctx);
      const before = await read(row, ctx);
      if (TERMINAL.has(before.state.status)) throw new McpError(ErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${before.state.status}`);
      const kind = kindOf(row);
      if (!kind.cancel) throw new McpError(ErrorCode.InvalidParams, `A ${row.tool} task cannot be cancelled: its work runs to its end.`);
      const answer = await kind.cancel(kindContext(ctx), row.subject!);
      if (answer.status >= 400) throw refusal(answer);
      const after = await read(row, ctx);
      return taskOf(row, after.state, after.at);
    },

    /** `tasks/list`: the account's tasks, newest first. */
    async list(cursor: string | undefined, ctx: CallContext): Promise<ListTasksResult> {
      let after: Array<string | number> | null;
      try {
        after = decodeCursor(cursor, ['text', 'uuid']);
      } catch {
        throw new McpError(ErrorCode.InvalidParams, 'cursor is not a nextCursor returned by tasks/list.');
      }
      const page = await listMcpTasks(ctx.deps.db, ctx.caller.account.id, TASKS_PAGE, after);
      const tasks = await Promise.all(page.rows.map(async (row) => {
        const r = await read(row, ctx);
        return taskOf(row, r.state, r.at);
      }));
      return { tasks, ...(page.nextAfter ? { nextCursor: encodeCursor(page.nextAfter) } : {}) };
    },
  };
}

export type Tasks = ReturnType<typeof createTasks>;

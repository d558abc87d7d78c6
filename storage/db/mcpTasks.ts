import type { Db } from './knex.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';

/** An MCP task as stored (migration 039): what links it to its work, never its status. */
export interface McpTaskRow {
  id: string;
  account_id: string;
  tool: string;
  /** The arguments of the read that reports the task's work; null when the call was refused. */
  subject: Record<string, unknown> | null;
  /** The tool's answer to a call refused before any work began; null otherwise. */
  outcome: Record<string, unknown> | null;
  ttl_ms: number | null;
  poll_interval_ms: number;
  created_at: Date;
  expires_at: Date | null;
}

const COLUMNS = ['id', 'account_id', 'tool', 'subject', 'outcome', 'ttl_ms', 'poll_interval_ms', 'created_at', 'expires_at'];
const CREATED_AT = `to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;

/** pg reads a bigint as text; a time to live in ms fits a double exactly. */
function fromRow(r: McpTaskRow): McpTaskRow {
  return { ...r, ttl_ms: r.ttl_ms === null ? null : Number(r.ttl_ms) };
}

export async function insertMcpTask(db: Db, t: Omit<McpTaskRow, 'created_at' | 'expires_at'>): Promise<McpTaskRow> {
  const [row] = await db('mcp_tasks').insert({
    ...t,
    subject: t.subject === null ? null : JSON.stringify(t.subject),
    outcome: t.outcome === null ? null : JSON.stringify(t.outcome),
    expires_at: t.ttl_ms === null ? null : db.raw(`now() + make_interval(secs => ?::float8 / 1000)`, [t.ttl_ms]),
  }).returning(COLUMNS);
  return fromRow(row as McpTaskRow);
}

/** The account's task, unless it has expired; another account's is missing. */
export async function getMcpTask(db: Db, accountId: string, id: string): Promise<McpTaskRow | undefined> {
  const row = await db('mcp_tasks')
    .where({ id, account_id: accountId })
    .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', db.fn.now()))
    .first(COLUMNS);
  return row ? fromRow(row as McpTaskRow) : undefined;
}

/** The account's live tasks, newest first. */
export async function listMcpTasks(db: Db, accountId: string, limit: number, after: Array<string | number> | null): Promise<KeysetPage<McpTaskRow>> {
  const q = db('mcp_tasks')
    .select([...COLUMNS, db.raw(`${CREATED_AT} as sort_at`)])
    .where({ account_id: accountId })
    .andWhere((w) => w.whereNull('expires_at').orWhere('expires_at', '>', db.fn.now()));
  const page = await keysetPage<McpTaskRow & { sort_at: string }>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit, after, sortExpr: { sort_at: CREATED_AT } });
  return { ...page, rows: page.rows.map(({ sort_at: _, ...r }) => fromRow(r)) };
}

/** Deletes tasks past their time to live; returns how many. */
export async function purgeExpiredMcpTasks(db: Db): Promise<number> {
  return db('mcp_tasks').where('expires_at', '<=', db.fn.now()).delete();
}

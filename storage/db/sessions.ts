import type { Db } from './knex.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';

export interface Requirement { id: string; text: string; evidence_kind: 'run' | 'passport' | 'file' | 'dataset' | 'experiment' | 'resource' | 'note' }
export type StepStatus = 'pending' | 'started' | 'done' | 'blocked' | 'skipped';
export interface Step { id: string; title: string; depends_on: string[]; status: StepStatus }

export interface SessionRow {
  id: string;
  account_id: string;
  title: string;
  goal: string | null;
  /** `failed`: its workflow ended, or never started, without completing it (the reconciliation's finding, in `error`). */
  status: 'open' | 'completed' | 'failed';
  version: number;
  contract: { requirements: Requirement[] } | null;
  execution_plan: { steps: Step[] } | null;
  progress_count: number;
  workspace_id: string | null;
  evidence: EvidenceBinding[];
  validation: Record<string, unknown> | null;
  completion: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  /** Why a `failed` session ended; null otherwise. */
  error: { code: string; message: string } | null;
}

export interface EvidenceBinding { requirement_id: string; ref: string }

export interface ProgressRow { session_id: string; seq: number; step_id: string; status: Exclude<StepStatus, 'pending'>; note: string | null; evidence: string[]; actor: string | null; recorded_at: Date }
export interface ExternalSessionRow { session_id: string; provider: string; external_id: string; url: string | null; attached_at: Date }

export async function createSession(db: Db, s: { id: string; account_id: string; title: string; goal: string | null }): Promise<SessionRow> {
  const [row] = await db('sessions').insert({ ...s, status: 'open' }).returning('*');
  return row as SessionRow;
}

/** Undoes a session whose workflow could not be started (nothing else refers to it yet). */
export async function deleteSession(db: Db, id: string): Promise<void> {
  await db('sessions').where({ id, version: 0, progress_count: 0 }).delete();
}

/**
 * Ends an open session `failed` with why (its workflow is gone: nothing can change it any
 * more). False when it was not open (completed meanwhile, or failed already).
 */
export async function failSession(db: Db, id: string, error: { code: string; message: string }): Promise<boolean> {
  const n = await db('sessions').where({ id, status: 'open' }).update({ status: 'failed', error: JSON.stringify(error), updated_at: db.fn.now() });
  return n > 0;
}

/** A session of this account, or undefined (another account's is the same as none). */
/** A session of this account (any account's when none is given: the operator's). */
export async function getSession(db: Db, id: string, accountId?: string): Promise<SessionRow | undefined> {
  const q = db('sessions').where({ id });
  if (accountId) q.andWhere({ account_id: accountId });
  return q.first();
}

/** Newest first; `status` narrows. */
export async function listSessions(db: Db, accountId: string, f: { status?: string | null; limit: number; after?: Array<string | number> | null }): Promise<KeysetPage<SessionRow>> {
  const expr = `to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;
  const q = db('sessions').where({ account_id: accountId }).select('*', db.raw(`${expr} as sort_at`));
  if (f.status) q.andWhere({ status: f.status });
  return keysetPage<SessionRow>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: expr } });
}

export async function externalSessions(db: Db, sessionId: string): Promise<ExternalSessionRow[]> {
  return db('session_external_sessions').where({ session_id: sessionId }).orderBy('attached_at');
}

/** The last `n` progress entries, newest first. */
export async function recentProgress(db: Db, sessionId: string, n: number): Promise<ProgressRow[]> {
  return db('session_progress').where({ session_id: sessionId }).orderBy('seq', 'desc').limit(n);
}

/** Attaches a conversation (once: the workflow refuses a duplicate before this). */
export async function attachExternalSession(db: Db, e: Omit<ExternalSessionRow, 'attached_at'>): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('session_external_sessions').insert(e).onConflict(['session_id', 'provider', 'external_id']).ignore();
    await trx('sessions').where({ id: e.session_id }).update({ updated_at: trx.fn.now() });
  });
}

/**
 * Applies an approved contract or execution plan, consuming the plan, as version
 * `version` of the session, in one transaction. False when the plan was used already
 * (a retried step of the same change finds the session at that version: true).
 */
export async function applySessionChange(db: Db, c: { sessionId: string; planId: string; version: number; contract?: SessionRow['contract']; executionPlan?: SessionRow['execution_plan'] }): Promise<boolean> {
  return db.transaction(async (trx) => {
    const row: SessionRow = await trx('sessions').where({ id: c.sessionId }).forUpdate().first();
    if (row.version >= c.version) return true;
    const { rows: [used] } = await trx.raw('SELECT silico_consume_plan(?, ?) AS ok', [c.planId, `session:${c.sessionId}:v${c.version}`]);
    if (!used.ok) return false;
    await trx('sessions').where({ id: c.sessionId }).update({
      version: c.version, updated_at: trx.fn.now(),
      ...(c.contract ? { contract: JSON.stringify(c.contract) } : {}),
      ...(c.executionPlan ? { execution_plan: JSON.stringify(c.executionPlan) } : {}),
    });
    return true;
  });
}

/** Records progress entries (each `seq` once) and the step states they leave, in one transaction. */
export async function recordSessionProgress(db: Db, entries: Array<Omit<ProgressRow, 'recorded_at'>>, steps: Step[]): Promise<void> {
  if (!entries.length) return;
  const last = entries[entries.length - 1]!;
  await db.transaction(async (trx) => {
    await trx('session_progress').insert(entries.map((p) => ({ ...p, evidence: JSON.stringify(p.evidence) }))).onConflict(['session_id', 'seq']).ignore();
    await trx('sessions').where({ id: last.session_id }).andWhere('progress_count', '<', last.seq)
      .update({ progress_count: last.seq, execution_plan: JSON.stringify({ steps }), updated_at: trx.fn.now() });
  });
}

/** Every evidence reference progress entries attached, in their order. */
export async function evidenceOfProgress(db: Db, sessionId: string): Promise<Array<{ seq: number; ref: string }>> {
  const { rows } = await db.raw(
    `SELECT p.seq, e.ref FROM session_progress p CROSS JOIN LATERAL jsonb_array_elements_text(p.evidence) AS e(ref)
     WHERE p.session_id = ? AND p.evidence <> '[]'::jsonb ORDER BY p.seq`, [sessionId]);
  return rows;
}

/** Binds evidence to requirements (each pair once) and records the validation it led to. */
export async function recordValidation<V>(db: Db, sessionId: string, bind: EvidenceBinding[], validate: (s: SessionRow) => Promise<V>): Promise<V> {
  return db.transaction(async (trx) => {
    const s: SessionRow = await trx('sessions').where({ id: sessionId }).forUpdate().first();
    const key = (e: EvidenceBinding) => `${e.requirement_id}\u0000${e.ref}`;
    const have = new Set(s.evidence.map(key));
    const evidence = [...s.evidence, ...bind.filter((e) => !have.has(key(e)) && have.add(key(e)))];
    const validation = await validate({ ...s, evidence });
    await trx('sessions').where({ id: sessionId }).update({ evidence: JSON.stringify(evidence), validation: JSON.stringify(validation), updated_at: trx.fn.now() });
    return validation;
  });
}

/**
 * Records a completion check with the validation it rests on; when nothing is missing
 * the session is completed (read-only from then on).
 */
export async function recordCompletion<V, C extends { complete: boolean }>(db: Db, sessionId: string, check: (s: SessionRow) => Promise<{ validation: V; completion: C }>): Promise<{ validation: V; completion: C }> {
  return db.transaction(async (trx) => {
    const s: SessionRow = await trx('sessions').where({ id: sessionId }).forUpdate().first();
    if (s.status === 'completed') return { validation: s.validation as V, completion: s.completion as C };
    const out = await check(s);
    await trx('sessions').where({ id: sessionId }).update({
      validation: JSON.stringify(out.validation), completion: JSON.stringify(out.completion), updated_at: trx.fn.now(),
      ...(out.completion.complete ? { status: 'completed', completed_at: trx.fn.now() } : {}),
    });
    return out;
  });
}

/** The session's workspace: the one it has, or the one `create` makes (once, under the session's row lock). */
export async function sessionWorkspace(db: Db, sessionId: string, create: (trx: Db, s: SessionRow) => Promise<string>): Promise<string> {
  return db.transaction(async (trx) => {
    const s: SessionRow = await trx('sessions').where({ id: sessionId }).forUpdate().first();
    if (s.workspace_id) return s.workspace_id;
    const workspaceId = await create(trx, s);
    await trx('sessions').where({ id: sessionId }).update({ workspace_id: workspaceId, updated_at: trx.fn.now() });
    return workspaceId;
  });
}

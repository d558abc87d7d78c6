import type { Db } from './knex.ts';
import { newUuid } from '../ids.ts';
import { digestJson } from '../digest.ts';
import { runPrepared, statement } from './prepared.ts';

export interface Finding {
  severity: 'info' | 'warning' | 'blocking';
  code: string;
  message: string;
  path: string | null;
  /** Where in an uploaded file, as far as its checker says. */
  location?: { file: string | null; row: number | null; column: string | null };
}

export interface PlanRow {
  id: string;
  account_id: string;
  kind: string;
  proposal: Record<string, unknown>;
  findings: Finding[];
  status: 'ready' | 'blocked';
  plan_sha256: string;
  expires_at: Date;
  consumed_at: Date | null;
  result_ref: string | null;
  created_at: Date;
}

/** PlanRow's columns, named for prepared statements (storage/db/prepared.ts). */
const PLAN_COLUMNS = 'id, account_id, kind, proposal, findings, status, plan_sha256, expires_at, consumed_at, result_ref, created_at';

/** The exact object whose RFC 8785 SHA-256 is the plan digest (returned to clients as-is). */
export function digestInput(plan: Pick<PlanRow, 'kind' | 'account_id' | 'proposal' | 'expires_at'>) {
  return { kind: plan.kind, account: plan.account_id, proposal: plan.proposal, expires_at: new Date(plan.expires_at).toISOString() };
}

/**
 * Records a prepared proposal with its findings and digest. A plan with a blocking
 * finding is `blocked`; it can be read but never executed.
 */
export async function createPlan(
  db: Db,
  p: { accountId: string; kind: string; proposal: Record<string, unknown>; findings: Finding[]; ttlSeconds: number },
): Promise<PlanRow> {
  const expires = new Date(Date.now() + p.ttlSeconds * 1000);
  const row = { kind: p.kind, account_id: p.accountId, proposal: p.proposal, expires_at: expires };
  const [saved] = await runPrepared<PlanRow>(db, INSERT_PLAN, [
    newUuid(), p.accountId, p.kind, JSON.stringify(p.proposal), JSON.stringify(p.findings),
    p.findings.some((f) => f.severity === 'blocking') ? 'blocked' : 'ready', digestJson(digestInput(row)), expires,
  ]);
  return saved!;
}
const INSERT_PLAN = statement('insert-plan', `
  INSERT INTO plans (id, account_id, kind, proposal, findings, status, plan_sha256, expires_at)
  VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $7, $8) RETURNING ${PLAN_COLUMNS}`);

/** A plan of this account, or undefined (another account's plan is the same as none). */
export async function getPlan(db: Db, id: string, accountId: string): Promise<PlanRow | undefined> {
  const [row] = await runPrepared<PlanRow>(db, GET_PLAN, [id, accountId]);
  return row;
}
const GET_PLAN = statement('get-plan', `SELECT ${PLAN_COLUMNS} FROM plans WHERE id = $1 AND account_id = $2`);

/** Marks a plan used by `resultRef`; false when it was already used (one approval, one result). */
export async function consumePlan(db: Db, id: string, resultRef: string): Promise<boolean> {
  const [row] = await runPrepared<{ ok: boolean }>(db, CONSUME_PLAN, [id, resultRef]);
  return row!.ok;
}
const CONSUME_PLAN = statement('consume-plan', 'SELECT silico_consume_plan($1, $2) AS ok');

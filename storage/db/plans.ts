import type { Db } from './knex.ts';
import { newUuid } from '../ids.ts';
import { digestJson } from '../digest.ts';

export interface Finding {
  severity: 'info' | 'warning' | 'blocking';
  code: string;
  message: string;
  path: string | null;
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
  const [saved] = await db('plans')
    .insert({
      id: newUuid(), account_id: p.accountId, kind: p.kind, proposal: JSON.stringify(p.proposal), findings: JSON.stringify(p.findings),
      status: p.findings.some((f) => f.severity === 'blocking') ? 'blocked' : 'ready',
      plan_sha256: digestJson(digestInput(row)), expires_at: expires,
    })
    .returning('*');
  return saved as PlanRow;
}

/** A plan of this account, or undefined (another account's plan is the same as none). */
export async function getPlan(db: Db, id: string, accountId: string): Promise<PlanRow | undefined> {
  return db('plans').where({ id, account_id: accountId }).first();
}

/** Marks a plan used by `resultRef`; false when it was already used (one approval, one result). */
export async function consumePlan(db: Db, id: string, resultRef: string): Promise<boolean> {
  const { rows } = await db.raw<{ rows: Array<{ ok: boolean }> }>('SELECT silico_consume_plan(?, ?) AS ok', [id, resultRef]);
  return rows[0]!.ok;
}

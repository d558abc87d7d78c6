import type { Db } from './knex.ts';

export type HostingStatus = 'requested' | 'checking' | 'awaiting_review' | 'ready' | 'paused' | 'retiring' | 'retired' | 'failed' | 'rejected';
/** Statuses a lifecycle ends in; a lab in one of them may be hosted again. */
export const HOSTING_ENDED: readonly HostingStatus[] = ['retired', 'failed', 'rejected'];
export type HostingAction = 'pause' | 'resume' | 'retire';

export interface HostingCheck { check: string; status: 'passed' | 'failed' | 'pending'; detail: string; checked_at: string | null }
export interface HostingApproval { required: boolean; reasons: string[]; decision: 'approved' | 'rejected' | null; actor: string | null; note: string | null; decided_at: string | null }

export interface HostingRow {
  lab_id: string;
  account_id: string;
  status: HostingStatus;
  revision: number;
  release_id: string;
  reference: string;
  package_sha256: string;
  compute_profile: string;
  min_instances: number;
  max_instances: number;
  visibility: 'private' | 'team' | 'public';
  plan_id: string | null;
  approval: HostingApproval;
  checks: HostingCheck[];
  pending_action: HostingAction | null;
  generation: number;
  /** The task queue of the worker holding its warm instances, while one does. */
  serving_queue: string | null;
  created_at: Date;
  updated_at: Date;
  ready_at: Date | null;
  ended_at: Date | null;
}

export interface HostingEvent { at: Date; status: HostingStatus; kind: string; actor: string | null; message: string }

export class HostingExists extends Error {}
export class PlanAlreadyUsed extends Error {}

/** The hosting of a lab of this account (or any, for the operator), or undefined. */
export async function getHosting(db: Db, labId: string, accountId?: string): Promise<HostingRow | undefined> {
  const q = db('hostings').where({ lab_id: labId });
  if (accountId) q.andWhere({ account_id: accountId });
  return q.first();
}

/** The hosting of an account's lab, by the lab's name (a release names its lab so). */
export async function hostingOfLabNamed(db: Db, accountId: string, name: string): Promise<HostingRow | undefined> {
  return db('hostings as h').join('labs as l', 'l.id', 'h.lab_id').where({ 'l.account_id': accountId, 'l.name': name }).first('h.*');
}

/** The current lifecycle's history, oldest first. */
export async function hostingEvents(db: Db, labId: string, generation: number): Promise<HostingEvent[]> {
  return db('hosting_events').where({ lab_id: labId, generation }).orderBy('id').select('at', 'status', 'kind', 'actor', 'message');
}

/** Hostings in any of `statuses` (all when empty), oldest change first: the operator's review list. */
export async function listHostings(db: Db, statuses: HostingStatus[]): Promise<HostingRow[]> {
  const q = db('hostings').orderBy('updated_at');
  if (statuses.length) q.whereIn('status', statuses);
  return q.limit(500);
}

export type NewHosting = Omit<HostingRow, 'status' | 'revision' | 'checks' | 'pending_action' | 'generation' | 'serving_queue' | 'created_at' | 'updated_at' | 'ready_at' | 'ended_at'>;

/**
 * Records a hosting request once, in one transaction: consumes its plan, and records the
 * lab's hosting as `requested` (a new generation when an ended one is there). Throws
 * PlanAlreadyUsed, or HostingExists while a lifecycle of the lab is still going. Returns
 * the row and the one it replaced, so a request Temporal could not take is undone.
 */
export async function requestHosting(db: Db, h: NewHosting & { plan_id: string }): Promise<{ row: HostingRow; previous: HostingRow | null }> {
  return db.transaction(async (trx) => {
    const previous: HostingRow | undefined = await trx('hostings').where({ lab_id: h.lab_id }).forUpdate().first();
    if (previous && !HOSTING_ENDED.includes(previous.status)) throw new HostingExists();
    const generation = (previous?.generation ?? 0) + 1;
    const [used] = await trx('plans').where({ id: h.plan_id }).whereNull('consumed_at').update({ consumed_at: trx.fn.now(), result_ref: `hosting:${h.lab_id}:${generation}` }).returning('id');
    if (!used) throw new PlanAlreadyUsed();
    const values = {
      ...h, approval: JSON.stringify(h.approval), checks: '[]', status: 'requested', revision: 1, pending_action: null, generation,
      created_at: trx.fn.now(), updated_at: trx.fn.now(), ready_at: null, ended_at: null,
    };
    const [row] = previous
      ? await trx('hostings').where({ lab_id: h.lab_id }).update(values).returning('*')
      : await trx('hostings').insert(values).returning('*');
    await trx('hosting_events').insert({ lab_id: h.lab_id, generation, status: 'requested', kind: 'requested', actor: null, message: `Hosting of ${h.reference} requested.` });
    return { row: row as HostingRow, previous: previous ?? null };
  });
}

/** Undoes a request whose workflow could not start: its plan unused, its events gone, the row as it was. */
export async function unrequestHosting(db: Db, row: HostingRow, previous: HostingRow | null): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('hosting_events').where({ lab_id: row.lab_id, generation: row.generation }).delete();
    await trx('plans').where({ id: row.plan_id, result_ref: `hosting:${row.lab_id}:${row.generation}` }).update({ consumed_at: null, result_ref: null });
    if (!previous) {
      await trx('hostings').where({ lab_id: row.lab_id, generation: row.generation }).delete();
      return;
    }
    const { approval, checks, ...rest } = previous;
    await trx('hostings').where({ lab_id: row.lab_id, generation: row.generation }).update({ ...rest, approval: JSON.stringify(approval), checks: JSON.stringify(checks) });
  });
}

export interface HostingChange {
  status?: HostingStatus;
  revision?: number;
  checks?: HostingCheck[];
  approval?: HostingApproval;
  pending_action?: HostingAction | null;
}

/**
 * Records what the lifecycle workflow decided, with its history entry, in one
 * transaction. Only the workflow's own generation is written: a late activity of an
 * ended lifecycle changes nothing. Times of readiness and of the end follow the status.
 */
export async function recordHosting(db: Db, labId: string, generation: number, change: HostingChange, event: { kind: string; actor?: string | null; message: string }): Promise<void> {
  await db.transaction(async (trx) => {
    const row: HostingRow | undefined = await trx('hostings').where({ lab_id: labId, generation }).forUpdate().first();
    if (!row) return;
    const status = change.status ?? row.status;
    await trx('hostings').where({ lab_id: labId, generation }).update({
      ...(change.status ? { status } : {}),
      ...(change.revision !== undefined ? { revision: change.revision } : {}),
      ...(change.checks ? { checks: JSON.stringify(change.checks) } : {}),
      ...(change.approval ? { approval: JSON.stringify(change.approval) } : {}),
      ...(change.pending_action !== undefined ? { pending_action: change.pending_action } : {}),
      ...(status === 'ready' && !row.ready_at ? { ready_at: trx.fn.now() } : {}),
      ...(HOSTING_ENDED.includes(status) && !row.ended_at ? { ended_at: trx.fn.now() } : {}),
      updated_at: trx.fn.now(),
    });
    await trx('hosting_events').insert({ lab_id: labId, generation, status, kind: event.kind, actor: event.actor ?? null, message: event.message.slice(0, 2000) });
  });
}

/**
 * Charges the owner the standing cost of a ready deployment for `seconds` ending at
 * `periodEnd` (its `min_instances` warm instances at the profile's price), once per
 * period: a ledger movement from available to spent, `hosting:<lab>:<generation>:<end>`.
 * What the balance cannot cover is not charged; `short` says so (the lifecycle pauses).
 */
export async function chargeStandingCost(db: Db, labId: string, generation: number, periodEnd: string, seconds: number): Promise<{ charged_micros: number; short: boolean }> {
  return db.transaction(async (trx) => {
    const h: HostingRow | undefined = await trx('hostings').where({ lab_id: labId, generation }).first();
    if (!h) return { charged_micros: 0, short: false };
    const profile = await trx('compute_profiles').where({ id: h.compute_profile }).first('price_per_second_micros');
    const due = Math.ceil(h.min_instances * Number(profile.price_per_second_micros) * Math.max(0, seconds));
    if (due <= 0) return { charged_micros: 0, short: false };
    const balance = await trx('compute_balances').where({ account_id: h.account_id }).forUpdate().first('available_micros');
    const charge = Math.min(due, Number(balance?.available_micros ?? 0));
    if (charge > 0) {
      const { rows: [t] } = await trx.raw('SELECT silico_ledger_record(?, ?, ?, ?, ?::text[], ?::bigint[]) AS txn', [
        h.account_id, 'hosting', `hosting:${labId}:${generation}:${periodEnd}`, `Standing cost of ${h.min_instances} warm instance(s) of ${h.reference} for ${Math.round(seconds)} s`,
        ['available', 'spent'], [-charge, charge],
      ]);
      if (t.txn !== null) {
        await trx('compute_balances').where({ account_id: h.account_id })
          .update({ available_micros: trx.raw('available_micros - ?', [charge]), spent_micros: trx.raw('spent_micros + ?', [charge]) });
      }
    }
    return { charged_micros: charge, short: charge < due };
  });
}

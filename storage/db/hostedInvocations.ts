import type { Db } from './knex.ts';
import { runPrepared, statement } from './prepared.ts';
import { isSqlState, SQLSTATE } from './sqlStates.ts';

export type InvocationStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled' | 'expired';
export const INVOCATION_ENDED: readonly InvocationStatus[] = ['completed', 'failed', 'cancelled', 'expired'];

export interface InvocationRow {
  id: string;
  account_id: string;
  client_id: string;
  /** The key that accepted it: its spend counts against that key's caps. */
  key_id: string | null;
  lab_id: string;
  hosting_generation: number;
  reference: string;
  package_sha256: string;
  compute_profile: string;
  inputs: Record<string, unknown>;
  inputs_sha256: string;
  seed: number;
  max_seconds: number;
  /** The spend cap that set `max_seconds` (lower than the invocation could run otherwise), or null. */
  cap_micros: number | null;
  status: InvocationStatus;
  reserved_micros: number;
  settled_micros: number | null;
  outputs: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  attempts: number;
  lease_expires_at: Date | null;
  cancel_requested_at: Date | null;
  plan_id: string | null;
  /** When its workflow was started; null while its serving worker alone carries it (migration 059). */
  workflow_started_at: Date | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export interface InvocationArtifactRow { invocation_id: string; port: string; file_name: string; content_type: string; format: string; size_bytes: number; sha256: string; created_at: Date }

export class InvocationPlanUsed extends Error {}
export class InvocationNotCovered extends Error {}

const ledgerRef = (id: string) => `invocation:${id}`;

export type NewInvocation = { key_id?: string | null; cap_micros?: number | null } & Omit<InvocationRow, 'key_id' | 'cap_micros' | 'status' | 'settled_micros' | 'outputs' | 'error' | 'attempts' | 'lease_expires_at' | 'cancel_requested_at' | 'workflow_started_at' | 'created_at' | 'started_at' | 'finished_at'>;

/**
 * Accepts an invocation, all or nothing, in one round trip (silico_accept_invocation,
 * migration 059): consumes its plan, reserves its maximum price under `invocation:<id>`
 * and records it queued, with no workflow yet (`markWorkflowStarted` once one is started);
 * for a deployment served now (`announceTo`, its serving queue) it announces it to that
 * worker at commit. Throws InvocationPlanUsed, InvocationNotCovered (the balance cannot
 * cover it) or a spend cap's refusal, and changes nothing then.
 */
export async function acceptInvocation(db: Db, inv: NewInvocation & { plan_id: string }, announceTo: string | null): Promise<InvocationRow> {
  try {
    const [row] = await runPrepared<InvocationRow>(db, ACCEPT_INVOCATION, [JSON.stringify(inv), inv.plan_id, announceTo]);
    return row!;
  } catch (err) {
    if (isSqlState(err, SQLSTATE.planUsed)) throw new InvocationPlanUsed();
    if (isSqlState(err, SQLSTATE.insufficientCompute)) throw new InvocationNotCovered();
    throw err;
  }
}
const INVOCATION_COLUMNS = `id, account_id, client_id, key_id, lab_id, hosting_generation, reference, package_sha256, compute_profile, inputs, inputs_sha256, seed,
  max_seconds, cap_micros, status, reserved_micros, settled_micros, outputs, error, attempts, lease_expires_at, cancel_requested_at, plan_id, workflow_started_at,
  created_at, started_at, finished_at`;
const ACCEPT_INVOCATION = statement('accept-invocation', `SELECT ${INVOCATION_COLUMNS} FROM silico_accept_invocation($1::jsonb, $2, $3)`);

/**
 * Invocations without a workflow that their serving worker is not carrying: queued for
 * `queuedSeconds` (their announcement was missed, or their worker went before leasing
 * them), or running under a lease expired `queuedSeconds` ago (their worker was lost, or
 * a cancellation it did not end), oldest first.
 */
export async function invocationsToRecover(db: Db, queuedSeconds: number, limit: number): Promise<Array<Pick<InvocationRow, 'id' | 'account_id' | 'lab_id' | 'hosting_generation' | 'reference' | 'reserved_micros' | 'cancel_requested_at'>>> {
  const ago = db.raw(`now() - make_interval(secs => ?)`, [queuedSeconds]);
  return db('hosted_invocations').whereNull('workflow_started_at').whereIn('status', ['queued', 'running'])
    .where((q) => q.where((r) => r.where({ status: 'queued' }).where('created_at', '<', ago)).orWhere('lease_expires_at', '<', ago))
    .orderBy('created_at').limit(limit).select('id', 'account_id', 'lab_id', 'hosting_generation', 'reference', 'reserved_micros', 'cancel_requested_at');
}

export async function markWorkflowStarted(db: Db, id: string): Promise<void> {
  await db('hosted_invocations').where({ id }).whereNull('workflow_started_at').update({ workflow_started_at: db.fn.now() });
}

/** Undoes an acceptance whose workflow could not start: reservation, plan use and row. False once it left the queue. */
export async function unacceptInvocation(db: Db, id: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const row: InvocationRow | undefined = await trx('hosted_invocations').where({ id }).forUpdate().first();
    if (!row || row.status !== 'queued') return false;
    const txn = await trx('ledger_txns').where({ kind: 'reserve', ref: ledgerRef(id) }).first('id');
    if (txn) {
      await trx('compute_balances').where({ account_id: row.account_id })
        .update({ available_micros: trx.raw('available_micros + ?', [row.reserved_micros]), reserved_micros: trx.raw('reserved_micros - ?', [row.reserved_micros]) });
      await trx('ledger_entries').where({ txn_id: txn.id }).delete();
      await trx('ledger_txns').where({ id: txn.id }).delete();
    }
    if (row.plan_id) await trx('plans').where({ id: row.plan_id, result_ref: ledgerRef(id) }).update({ consumed_at: null, result_ref: null });
    await trx('hosted_invocations').where({ id }).delete();
    return true;
  });
}

/** An invocation of this account, or undefined (another account's is the same as none). */
export async function getInvocation(db: Db, id: string, accountId?: string): Promise<InvocationRow | undefined> {
  const q = db('hosted_invocations').where({ id });
  if (accountId) q.andWhere({ account_id: accountId });
  return q.first();
}

/**
 * Takes the lease of an invocation for one execution attempt: queued or running (a retry
 * after a lost worker) becomes running with a fresh lease. Returns the status afterwards
 * and, when running, the attempt that holds the lease now; an ended invocation, or one
 * whose cancellation was asked for, is not started.
 */
export async function leaseInvocation(db: Db, id: string, leaseSeconds: number): Promise<{ status: InvocationStatus | 'cancel_requested'; attempt: number | null }> {
  const [row] = await db('hosted_invocations').where({ id }).whereIn('status', ['queued', 'running']).whereNull('cancel_requested_at')
    .update({
      status: 'running', attempts: db.raw('attempts + 1'), started_at: db.raw('coalesce(started_at, now())'),
      lease_expires_at: db.raw(`now() + make_interval(secs => ?)`, [leaseSeconds]),
    }).returning(['status', 'attempts']);
  if (row) return { status: row.status as InvocationStatus, attempt: Number(row.attempts) };
  const now = await db('hosted_invocations').where({ id }).first('status', 'cancel_requested_at');
  return { status: now?.cancel_requested_at && !INVOCATION_ENDED.includes(now.status) ? 'cancel_requested' : (now?.status as InvocationStatus), attempt: null };
}

/**
 * Renews the lease `attempt` holds: `held`, else `superseded` when a later attempt took it
 * (this one was presumed lost), or `revoked` (cancellation asked for, or the invocation ended).
 */
export async function renewLease(db: Db, id: string, leaseSeconds: number, attempt: number): Promise<'held' | 'superseded' | 'revoked'> {
  const n = await db('hosted_invocations').where({ id, status: 'running', attempts: attempt }).whereNull('cancel_requested_at')
    .update({ lease_expires_at: db.raw(`now() + make_interval(secs => ?)`, [leaseSeconds]) });
  if (n > 0) return 'held';
  const now = await db('hosted_invocations').where({ id }).first('attempts');
  return now && Number(now.attempts) !== attempt ? 'superseded' : 'revoked';
}

/**
 * Records that the caller asked to cancel and revokes the lease; an invocation that never
 * began ends cancelled here, nothing charged. Ended ones are left as they are. Returns
 * the row afterwards.
 */
export async function requestCancel(db: Db, id: string): Promise<InvocationRow> {
  await db('hosted_invocations').where({ id }).whereNotIn('status', INVOCATION_ENDED).whereNull('cancel_requested_at')
    .update({ cancel_requested_at: db.fn.now(), lease_expires_at: db.fn.now() });
  const row = (await getInvocation(db, id))!;
  if (row.status === 'queued') await finishInvocation(db, { id, status: 'cancelled', computeSeconds: 0 });
  return (await getInvocation(db, id))!;
}

export interface InvocationEnding {
  id: string;
  status: Extract<InvocationStatus, 'completed' | 'failed' | 'cancelled' | 'expired'>;
  error?: { code: string; message: string } | null;
  /** Measured compute; null charges the time since execution began (a stop that measured nothing). */
  computeSeconds: number | null;
}

/** What a completed execution leaves for its invoker: the public outputs and their artifacts, whose bytes are stored already. */
export interface InvocationResult { outputs: Record<string, unknown>; artifacts: Array<Omit<InvocationArtifactRow, 'created_at'>> }

/** An invocation's ending, by its id: sent when the ending commits. */
export const INVOCATION_ENDINGS_CHANNEL = 'silico_invocation_endings';

/**
 * Ends an invocation exactly once: charges its compute (never more than reserved) and
 * releases the rest, records the ending (and a completed execution's result), and
 * notifies INVOCATION_ENDINGS_CHANNEL, in one transaction. An ended one is unchanged.
 * `stored` is the storing of the result's artifact bytes, under way: the invocation is
 * locked and its artifacts recorded meanwhile, and the settlement (which locks the
 * account's balance, so it waits for nothing) is made and committed only once they are
 * stored (not at all should that fail), so no record names bytes the store does not hold.
 */
export async function finishInvocation(db: Db, e: InvocationEnding, result?: InvocationResult, stored?: Promise<unknown>, attempt?: number): Promise<InvocationStatus | 'superseded'> {
  // Awaited inside the transaction; a failure before that is not unhandled meanwhile.
  stored?.catch(() => undefined);
  return db.transaction(async (trx) => {
    // Its price read with it: one round trip less while the invocation's answer waits.
    const row: (InvocationRow & { price_per_second_micros: string }) | undefined = await trx('hosted_invocations as i').join('compute_profiles as p', 'p.id', 'i.compute_profile')
      .where('i.id', e.id).forUpdate('i').first('i.*', 'p.price_per_second_micros');
    if (!row) throw new Error(`no invocation ${e.id}`);
    if (INVOCATION_ENDED.includes(row.status)) return row.status;
    // An attempt presumed lost whose lease a later one took records nothing: the later one ends it.
    if (attempt !== undefined && Number(row.attempts) !== attempt) return 'superseded';
    if (result?.artifacts.length) await trx('hosted_invocation_artifacts').insert(result.artifacts).onConflict(['invocation_id', 'file_name']).ignore();
    await stored;
    const seconds = e.computeSeconds ?? (row.started_at ? (Date.now() - new Date(row.started_at).getTime()) / 1000 : 0);
    const charge = Math.min(Math.ceil(Math.max(0, seconds) * Number(row.price_per_second_micros)), Number(row.reserved_micros));
    const { rows: [s] } = await trx.raw('SELECT charged_micros FROM silico_settle_compute(?, ?, ?)', [row.account_id, ledgerRef(row.id), charge]);
    await trx('hosted_invocations').where({ id: e.id }).update({
      status: e.status, error: e.error ? JSON.stringify(e.error) : null, settled_micros: s.charged_micros,
      outputs: result ? JSON.stringify(result.outputs) : null, finished_at: trx.fn.now(), lease_expires_at: null,
    });
    await trx.raw('SELECT pg_notify(?, ?)', [INVOCATION_ENDINGS_CHANNEL, e.id]);
    return e.status;
  });
}

export async function invocationArtifacts(db: Db, id: string): Promise<InvocationArtifactRow[]> {
  return db('hosted_invocation_artifacts').where({ invocation_id: id }).orderBy('file_name');
}

/** The worker task queue serving a deployment's warm instances, or null while none does. */
export async function setServingQueue(db: Db, labId: string, generation: number, queue: string | null, onlyIf?: string): Promise<void> {
  const q = db('hostings').where({ lab_id: labId, generation });
  if (onlyIf) q.andWhere({ serving_queue: onlyIf });
  await q.update({ serving_queue: queue });
}

export async function servingQueue(db: Db, labId: string, generation: number): Promise<{ queue: string | null; status: string } | undefined> {
  const row = await db('hostings').where({ lab_id: labId, generation }).first('serving_queue', 'status');
  return row ? { queue: row.serving_queue, status: row.status } : undefined;
}

/** Where an accepted invocation is announced to the worker serving its deployment (payload `<queue> <invocation id>`). */
export const INVOCATIONS_ACCEPTED_CHANNEL = 'silico_invocations_accepted';

/**
 * Tells the worker on `queue` that the invocation was accepted and its workflow started, so
 * that worker may begin it at once, ahead of the workflow's activity (which then joins it).
 */
export async function announceInvocation(db: Db, queue: string, id: string): Promise<void> {
  await db.raw('SELECT pg_notify(?, ?)', [INVOCATIONS_ACCEPTED_CHANNEL, `${queue} ${id}`]);
}

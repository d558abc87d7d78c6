import type { Db } from './db/knex.ts';
import { appendEvent, getRun, TERMINAL, type RunRow, type RunStatus } from './db/runs.ts';
import { settleCompute } from './ledger.ts';
import { getComputeProfile } from './db/computeProfiles.ts';

/**
 * Moves a queued run to running when its account has a free concurrency slot. A
 * transaction-scoped advisory lock per account makes the count-then-update atomic
 * across workers. Returns 'running' (slot taken now or before), 'wait', or the terminal
 * / cancelling status that makes waiting pointless.
 */
export async function acquireRunSlot(db: Db, runId: string, maxConcurrent: number): Promise<RunStatus | 'wait'> {
  return db.transaction(async (trx) => {
    const run = await trx('runs').where({ id: runId }).first('account_id', 'status');
    if (!run) throw new Error(`no run ${runId}`);
    if (run.status !== 'queued') return run.status as RunStatus;
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', [`run-slots:${run.account_id}`]);
    const { count } = (await trx('runs').where({ account_id: run.account_id }).whereIn('status', ['running', 'cancelling']).count<{ count: string }[]>('* as count').first())!;
    if (Number(count) >= maxConcurrent) return 'wait';
    await trx('runs').where({ id: runId, status: 'queued' }).update({ status: 'running' });
    return 'running';
  }).then(async (s) => {
    if (s === 'running') await appendOnce(db, runId, 'state_changed', 'Run is running.', { status: 'running' });
    return s;
  });
}

/** Appends a state event unless the last event already says the same (activity retries). */
async function appendOnce(db: Db, runId: string, type: string, message: string, data: Record<string, unknown>): Promise<void> {
  const last = await db('run_events').where({ run_id: runId }).orderBy('seq', 'desc').first('type', 'data');
  if (last && last.type === type && JSON.stringify(last.data) === JSON.stringify(data)) return;
  await appendEvent(db, runId, type, message, data);
}

export interface Finish {
  runId: string;
  status: Extract<RunStatus, 'completed' | 'failed' | 'cancelled' | 'timed_out'>;
  error?: { code: string; message: string } | null;
  /** Measured compute seconds; when unknown, wall time since execution began is charged (none if it never began). */
  computeSeconds?: number | null;
  outputs?: Record<string, unknown> | null;
}

/**
 * Ends a run exactly once, whatever the ending: charges actual compute (never more than
 * reserved) and releases the rest, then records the terminal state and its events. A
 * run already terminal is returned unchanged, so retries and races are harmless.
 */
export async function finishRun(db: Db, f: Finish): Promise<RunRow> {
  const run = await getRun(db, f.runId);
  if (!run) throw new Error(`no run ${f.runId}`);
  if (TERMINAL.includes(run.status)) return run;
  const profile = (await getComputeProfile(db, run.compute_profile))!;
  const seconds = f.computeSeconds ?? (run.started_at ? (Date.now() - new Date(run.started_at).getTime()) / 1000 : 0);
  const wanted = Math.ceil(Math.max(0, seconds) * profile.price_per_second_micros);
  const { charged_micros } = await settleCompute(db, run.account_id, `run:${run.id}`, Math.min(wanted, run.reserved_micros));
  const updated = await db('runs')
    .where({ id: run.id })
    .whereNotIn('status', TERMINAL as RunStatus[])
    .update({
      status: f.status, error: f.error ? JSON.stringify(f.error) : null, settled_micros: charged_micros,
      outputs: f.outputs ? JSON.stringify(f.outputs) : null, finished_at: db.fn.now(),
      progress: f.status === 'completed' ? 1 : run.progress,
    });
  if (updated) {
    await appendEvent(db, run.id, 'charge_settled', `Charged ${charged_micros} micro-dollars of ${run.reserved_micros} reserved.`, { charged_micros, released_micros: run.reserved_micros - charged_micros });
    await appendEvent(db, run.id, 'state_changed', `Run ${f.status}.`, { status: f.status, ...(f.error ? { error: f.error } : {}) });
  }
  return (await getRun(db, run.id))!;
}

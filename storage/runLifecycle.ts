import type { Db } from './db/knex.ts';
import type { RunStatus } from './db/runs.ts';
import { runPrepared, statement } from './db/prepared.ts';

/**
 * A run's transitions after acceptance, each one database function (migration 016), so
 * one round trip and one transaction whatever it touches.
 */

/**
 * Moves a queued run to running when its account has a free concurrency slot (a
 * per-account advisory lock makes the count-then-update atomic across workers), and
 * appends its `running` event in the same transaction. Returns 'running' (slot taken now
 * or before), 'wait', or the cancelling / terminal status that makes waiting pointless.
 */
export async function acquireRunSlot(db: Db, runId: string, maxConcurrent: number): Promise<RunStatus | 'wait'> {
  const [row] = await runPrepared<{ status: RunStatus | 'wait' }>(db, ACQUIRE_SLOT, [runId, maxConcurrent]);
  return row!.status;
}
const ACQUIRE_SLOT = statement('acquire-run-slot', 'SELECT silico_acquire_run_slot($1, $2) AS status');

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
 * reserved) and releases the rest, records the terminal state and appends its
 * `charge_settled` and terminal events, all in one transaction. A run already terminal
 * is left unchanged, so retries and races are harmless. Returns the status afterwards.
 */
export async function finishRun(db: Db, f: Finish): Promise<RunStatus> {
  const [row] = await runPrepared<{ status: RunStatus }>(db, FINISH_RUN, [
    f.runId, f.status, f.error ? JSON.stringify(f.error) : null, f.computeSeconds ?? null, f.outputs ? JSON.stringify(f.outputs) : null,
  ]);
  return row!.status;
}
const FINISH_RUN = statement('finish-run', 'SELECT silico_finish_run($1, $2, $3::jsonb, $4, $5::jsonb) AS status');

/**
 * Ends a run that has not begun as cancelled, nothing charged (silico_cancel_queued_run,
 * migration 020): a study's runs wait for their turn without a workflow of their own, so
 * cancelling one is a row change. Returns the status afterwards; a run that began is
 * left to its workflow.
 */
export async function cancelQueuedRun(db: Db, runId: string): Promise<RunStatus> {
  const [row] = await runPrepared<{ status: RunStatus }>(db, CANCEL_QUEUED, [runId]);
  return row!.status;
}
const CANCEL_QUEUED = statement('cancel-queued-run', 'SELECT silico_cancel_queued_run($1) AS status');

import { WorkflowExecutionAlreadyStartedError, type WorkflowStartOptions } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import type { TemporalGateway } from './temporal.ts';

/** What the api accepts and the workflow that then owns it. */
export interface Acceptance<R, W extends Workflow> {
  /** Records the acceptance, all or nothing (plan consumed, compute reserved, rows written). */
  record(): Promise<R>;
  /** The answer to a refusal of the record (a plan used, a balance too low); null lets the error through. */
  refusal?(err: unknown): Promise<Error | null> | Error | null;
  workflow: W;
  /** How its workflow starts, given what was recorded. */
  start(recorded: R): WorkflowStartOptions<W>;
  startOptions?: { awaitPreviousMs?: number };
  /** Undoes the record: plan unused, reservation released, rows gone. */
  undo(recorded: R): Promise<unknown>;
  /**
   * The record an earlier attempt of this request made (the one its plan was consumed
   * for) while it may still lack its workflow; null when there is none or it has begun.
   */
  earlier?(): Promise<R | null>;
}

type Recording<R> = Pick<Acceptance<R, Workflow>, 'record' | 'refusal' | 'earlier'>;

/**
 * The record (`fresh`), or, when it is refused, the record an earlier attempt of the same
 * request made, if `take` takes it up; otherwise the refusal's answer (or the error) is thrown.
 */
async function recordOrEarlier<R>(a: Recording<R>, take: (before: R) => Promise<boolean>): Promise<{ row: R; fresh: boolean }> {
  try {
    return { row: await a.record(), fresh: true };
  } catch (err) {
    const answer = await a.refusal?.(err);
    const before = answer && a.earlier ? await a.earlier() : null;
    if (before && (await take(before))) return { row: before, fresh: false };
    throw answer ?? err;
  }
}

/**
 * Records what the api accepted when no workflow is to start with it (what takes it on
 * is told otherwise): a refused record whose earlier attempt recorded it answers that one.
 */
export async function acceptOnly<R>(a: Recording<R>): Promise<R> {
  return (await recordOrEarlier(a, async () => true)).row;
}

/** Starts a workflow; false when one of that id was started already (by this record's other attempt). */
async function startedNow<W extends Workflow>(temporal: TemporalGateway, workflow: W, options: WorkflowStartOptions<W>, opts?: { awaitPreviousMs?: number }): Promise<boolean> {
  try {
    await temporal.startWorkflow(workflow, options, opts);
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw err;
  }
}

/**
 * Records what the api accepted, then starts the workflow that owns it. When Temporal
 * cannot take it, the acceptance is undone and the answer is 503 (the gateway's), so a
 * retry completes it. Should the undo fail too (or the replica die between the two), the
 * record stays without its workflow: a retry of the same plan, refused as used, finds
 * that record (`earlier`) and starts its workflow, answering as the first attempt would
 * have; left alone, the reconciliation ends it, charging nothing. A workflow already
 * started for the record (by such a retry) is this attempt's own.
 */
export async function acceptAndStart<R, W extends Workflow>(temporal: TemporalGateway, a: Acceptance<R, W>): Promise<R> {
  const { row: recorded, fresh } = await recordOrEarlier(a, (before) => startedNow(temporal, a.workflow, a.start(before), a.startOptions));
  if (!fresh) return recorded;
  try {
    await startedNow(temporal, a.workflow, a.start(recorded), a.startOptions);
  } catch (err) {
    await a.undo(recorded).catch(() => undefined);
    throw err;
  }
  return recorded;
}

/**
 * Completes what an earlier attempt of the same request accepted: a replica that died
 * between recording and starting left the record without its workflow, and the retry
 * (the same Idempotency-Key, so the same record id) starts it. A workflow already started
 * under that id is the earlier attempt's own: nothing more to do.
 */
export async function startAccepted<W extends Workflow>(temporal: TemporalGateway, workflow: W, options: WorkflowStartOptions<W>): Promise<void> {
  await startedNow(temporal, workflow, options);
}

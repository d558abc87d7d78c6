import type { Db } from '../../storage/db/knex.ts';
import { appendEvents, type NewRunEvent } from '../../storage/db/runs.ts';
import { createWriteChain } from './writeChain.ts';

/** A run's events written in order, as many at a time as have queued up. */
export interface EventBatcher {
  add(type: string, message: string, data: Record<string, unknown>): void;
  /** Writes what is queued now, and resolves once everything added so far is written (rejects with the first write that failed). */
  flushed(): Promise<void>;
}

/**
 * How long the first event of a quiet spell waits for others: a short run's events (its
 * start, its process, its progress) then go in one write instead of one each, and a live
 * reader sees them this much later at most.
 */
const GATHER_MS = 20;

/**
 * Queues a run's events and writes them in batches, one write in flight at a time: while
 * one is written, or for GATHER_MS before the first, the next ones gather, so a lab that
 * writes a burst of lines costs a few round trips rather than one per line, and its run's
 * ending never waits behind hundreds (nor for the gathering: `flushed` writes at once).
 */
export function createEventBatcher(db: Db, runId: string, maxBatch = 200): EventBatcher {
  let queued: NewRunEvent[] = [];
  let active = false;
  let wake: (() => void) | null = null;
  const writes = createWriteChain();
  const drain = async () => {
    try {
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, GATHER_MS).unref();
      });
      wake = null;
      while (queued.length) {
        const batch = queued.slice(0, maxBatch);
        queued = queued.slice(batch.length);
        await appendEvents(db, runId, batch);
      }
    } finally {
      active = false;
    }
  };
  return {
    add(type, message, data) {
      queued.push({ type, message, data });
      if (active) return;
      active = true;
      writes.add(drain);
    },
    flushed: () => {
      wake?.();
      return writes.settled();
    },
  };
}

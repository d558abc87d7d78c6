import type { Db } from '../../storage/db/knex.ts';
import { appendEvents, type NewRunEvent } from '../../storage/db/runs.ts';
import { createWriteChain } from './writeChain.ts';

/** A run's events written in order, as many at a time as have queued up. */
export interface EventBatcher {
  add(type: string, message: string, data: Record<string, unknown>): void;
  /** Resolves once everything added so far is written (rejects with the first write that failed). */
  flushed(): Promise<void>;
}

/**
 * Queues a run's events and writes them in batches, one write in flight at a time: while
 * one is written the next ones gather, so a lab that writes a burst of lines costs a few
 * round trips rather than one per line, and its run's ending never waits behind hundreds.
 */
export function createEventBatcher(db: Db, runId: string, maxBatch = 200): EventBatcher {
  let queued: NewRunEvent[] = [];
  let active = false;
  const writes = createWriteChain();
  const drain = async () => {
    active = true;
    try {
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
      if (!active) writes.add(drain);
    },
    flushed: () => writes.settled(),
  };
}

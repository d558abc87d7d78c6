import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * The Temporal server's matching with fair shares (kernel/fairShares.ts): queued tasks of
 * each fairness key (an account) take turns instead of first come, first served.
 */
export const FAIR_SHARES: Array<[string, boolean | number]> = [
  ['matching.enableFairness', true],
  // Turns are kept per partition of a queue: one partition on one machine, so they are exact.
  ['matching.numTaskqueueReadPartitions', 1],
  ['matching.numTaskqueueWritePartitions', 1],
];

/** The file that says a Temporal store's queued tasks are kept by the fair matcher. */
export const fairSharesMarker = (storeDir: string) => path.join(storeDir, 'temporal-fair-shares');

/**
 * The dynamic configuration that gives a Temporal store fair shares. Each matcher keeps
 * its queued tasks in tables of its own, and Temporal 1.29 never hands out what the other
 * one queued: a store made before fair shares keeps its matcher, and says so, until an
 * operator moves it with nothing queued (docs/decisions.md, "Fair shares").
 */
export async function fairSharesOf(storeDir: string, fresh: boolean, say: (line: string) => void): Promise<Array<[string, boolean | number]>> {
  const marker = fairSharesMarker(storeDir);
  if (fresh || existsSync(marker)) {
    await writeFile(marker, 'Queued tasks of this Temporal store are kept by the fair matcher (matching.enableFairness).\n');
    return FAIR_SHARES;
  }
  say(`temporal: this store predates fair shares, so tasks are handed out first come, first served. To move it: stop the stack with nothing queued, create ${marker}, start it again.`);
  return [];
}

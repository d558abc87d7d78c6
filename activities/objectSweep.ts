import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { NAMED_PREFIXES, unnamedObjects } from '../storage/db/objectNames.ts';

/** Keys asked about in one statement, and deleted in one request (S3's DeleteObjects limit). */
const BATCH = 1000;

/**
 * Garbage that cannot pile up: an object no record names (bytes stored by a write that
 * then failed: an upload whose record was never made, a run's output whose artifact row
 * was never written, a change prepared and never applied) is removed once it is older
 * than the grace period, which outlasts any write in flight (an upload, a run's outputs,
 * a plan's hour). Before each delete the object is read again: one rewritten (the same
 * bytes stored anew) is young again and stays, and the names are asked again right before.
 */
export function createObjectSweepActivities(deps: { db: Db; objects: ObjectStore }) {
  return {
    /** Removes unnamed objects last written more than `graceSeconds` ago; `keys` narrows a pass to those. Returns the keys removed. */
    async sweepUnnamedObjects(graceSeconds: number, keys?: string[]): Promise<{ removed: number; kept_young: number }> {
      const cutoff = Date.now() - graceSeconds * 1000;
      const listed = (await Promise.all(NAMED_PREFIXES.map((p) => deps.objects.list(p)))).flat()
        .filter((o) => !keys || keys.includes(o.key));
      const old = listed.filter((o) => o.lastModified.getTime() < cutoff).map((o) => o.key);
      let removed = 0;
      for (let i = 0; i < old.length; i += BATCH) {
        for (const key of await unnamedObjects(deps.db, old.slice(i, i + BATCH))) {
          const now = await deps.objects.lastModified(key);
          if (!now || now.getTime() >= cutoff) continue;
          // Asked once more at the last moment: a record made since the batch's question keeps it.
          if ((await unnamedObjects(deps.db, [key])).length === 0) continue;
          await deps.objects.delete(key);
          removed += 1;
        }
      }
      return { removed, kept_young: listed.length - old.length };
    },
  };
}

export type ObjectSweepActivities = ReturnType<typeof createObjectSweepActivities>;

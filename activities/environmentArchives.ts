import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { archiveUses, forgetUnusedArchive, heldLocks } from '../storage/db/environments.ts';
import { ARCHIVES_PREFIX, archiveOf, removeArchive } from './environments/shared.ts';

/** Counts the archives removed (the worker exports it to Prometheus). */
export interface RemovedCounter { inc(n?: number): void }

/**
 * The environment archives workers share through the object store
 * (activities/environments/shared.ts) are kept while they are used: each publication,
 * taking, and run in the lock's environment (at most hourly per worker) is noted in its
 * record. One unused past the retention goes, bytes and record; a worker that needs it
 * again builds it and publishes it anew.
 */
export function createEnvironmentArchiveActivities(deps: { db: Db; objects: ObjectStore; removed?: RemovedCounter }) {
  return {
    /**
     * Removes the archives not used for `retentionSeconds`, never one whose lock a queued or
     * running run, a publication in progress or a live hosting holds (its worker may be
     * building, publishing or about to take it). An archive that has no record (published
     * before uses were noted, or being published) was last used when its objects were
     * written. Returns how many archives went and how many stay.
     */
    async sweepEnvironmentArchives(retentionSeconds: number): Promise<{ removed: number; kept: number }> {
      const cutoff = new Date(Date.now() - retentionSeconds * 1000);
      const archives = new Map<string, { lock: string; layout: string; noted?: Date; written?: Date }>();
      const entry = (lock: string, layout: string) => {
        const key = `${lock}/${layout}`;
        if (!archives.has(key)) archives.set(key, { lock, layout });
        return archives.get(key)!;
      };
      for (const o of await deps.objects.list(ARCHIVES_PREFIX)) {
        const a = archiveOf(o.key);
        if (!a) continue;
        const e = entry(a.lock, a.layout);
        if (!e.written || o.lastModified > e.written) e.written = o.lastModified;
      }
      for (const r of await archiveUses(deps.db)) entry(r.lock_sha256, r.layout).noted = r.used_at;
      let removed = 0;
      let kept = 0;
      for (const a of archives.values()) {
        const used = a.noted ?? a.written!;
        // Asked again at the last moment: a run accepted since the listing holds its lock, and
        // a record noted since (a worker took or ran it) keeps it.
        const stays = used >= cutoff || (await heldLocks(deps.db)).has(a.lock) || !(await forgetUnusedArchive(deps.db, a.lock, a.layout, cutoff));
        if (stays) {
          if (a.written) kept += 1;
          continue;
        }
        if (!a.written) continue;
        await removeArchive(deps.objects, a.lock, a.layout);
        removed += 1;
        deps.removed?.inc();
      }
      return { removed, kept };
    },
  };
}

export type EnvironmentArchiveActivities = ReturnType<typeof createEnvironmentArchiveActivities>;

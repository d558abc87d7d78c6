import type { Db } from './knex.ts';

export interface EnvironmentLockRow { sha256: string; python: string; lock: string; distributions: number; built_at: Date | null; build_seconds: number | null; created_at: Date }

/** The lock a resolver request gave before, if any. */
export async function resolvedLock(db: Db, requestSha256: string): Promise<EnvironmentLockRow | undefined> {
  return db('environment_resolutions as r').join('environment_locks as l', 'l.sha256', 'r.lock_sha256')
    .where({ 'r.request_sha256': requestSha256 }).first('l.*');
}

/** Records a lock (content-addressed: the same lock twice is one row) and the request that gave it. */
export async function recordLock(db: Db, requestSha256: string, lock: { sha256: string; python: string; text: string; distributions: number }): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('environment_locks').insert({ sha256: lock.sha256, python: lock.python, lock: lock.text, distributions: lock.distributions }).onConflict('sha256').ignore();
    await trx('environment_resolutions').insert({ request_sha256: requestSha256, lock_sha256: lock.sha256 }).onConflict('request_sha256').ignore();
  });
}

export async function getLock(db: Db, sha256: string): Promise<EnvironmentLockRow | undefined> {
  return db('environment_locks').where({ sha256 }).first();
}

/** Records that a worker has built the lock (`seconds`: how long it took, when this call's build did it). */
export async function markLockBuilt(db: Db, sha256: string, seconds?: number): Promise<void> {
  await db('environment_locks').where({ sha256 }).whereNull('built_at').update({ built_at: db.fn.now(), ...(seconds === undefined ? {} : { build_seconds: seconds }) });
}

/** Seconds a build has taken per distribution here, over every timed build (null before the first). */
export async function buildSecondsPerDistribution(db: Db): Promise<number | null> {
  const [row] = await db('environment_locks').whereNotNull('build_seconds').select(db.raw('sum(build_seconds) / nullif(sum(distributions), 0) as rate'));
  return row?.rate === null || row?.rate === undefined ? null : Number(row.rate);
}

/**
 * The locks that queued or running runs, publications in progress and hostings that are
 * not over still need: what an eviction must keep.
 */
export async function heldLocks(db: Db): Promise<Set<string>> {
  const rows = await db.select('lock').from(
    db('runs').whereIn('status', ['queued', 'running', 'cancelling']).whereNotNull('runtime_sha256').distinct('runtime_sha256 as lock')
      .union(db('publications').where({ status: 'publishing' }).whereNotNull('environment_lock_sha256').distinct('environment_lock_sha256 as lock'))
      .union(db('hostings as h').join('releases as r', 'r.id', 'h.release_id').whereNotIn('h.status', ['retired', 'failed', 'rejected']).whereNotNull('r.environment_lock_sha256').distinct('r.environment_lock_sha256 as lock'))
      .as('held'),
  );
  return new Set(rows.map((r: { lock: string }) => r.lock));
}

/**
 * The runs that ended because a lock's environment could not be built: how many, and the
 * latest's id, time and message (an operator's occasional read: it scans failed runs).
 */
export async function buildFailures(db: Db, sha256: string): Promise<{ runs: number; latest: { run_id: string; finished_at: Date; message: string } | null }> {
  const failed = () => db('runs').where({ runtime_sha256: sha256, status: 'failed' }).whereRaw(`error->>'code' = 'environment_build_failed'`);
  const [counted] = await failed().count({ n: '*' });
  const latest = await failed().orderBy('finished_at', 'desc').first('id as run_id', 'finished_at', db.raw(`error->>'message' as message`));
  return { runs: Number(counted?.n ?? 0), latest: latest ?? null };
}

/** Notes that a worker published or took the archive of a lock's environment of this layout just now. */
export async function noteArchiveUsed(db: Db, lockSha256: string, layout: string): Promise<void> {
  await db('environment_archives').insert({ lock_sha256: lockSha256, layout }).onConflict(['lock_sha256', 'layout']).merge({ used_at: db.fn.now() });
}

/** Notes that a worker ran in a lock's environment just now: its archives of every layout count as used. */
export async function noteLockUsed(db: Db, lockSha256: string): Promise<void> {
  await db('environment_archives').where({ lock_sha256: lockSha256 }).update({ used_at: db.fn.now() });
}

/** When each archive noted was last used. */
export async function archiveUses(db: Db): Promise<Array<{ lock_sha256: string; layout: string; used_at: Date }>> {
  return db('environment_archives').select('lock_sha256', 'layout', 'used_at');
}

/**
 * Forgets an archive's record unless it was used at or after `before` (a worker took or
 * ran it since it was chosen for removal). Whether the archive may go: true when its
 * record was forgotten or there was none.
 */
export async function forgetUnusedArchive(db: Db, lockSha256: string, layout: string, before: Date): Promise<boolean> {
  const forgotten = await db('environment_archives').where({ lock_sha256: lockSha256, layout }).where('used_at', '<', before).delete();
  if (forgotten) return true;
  return !(await db('environment_archives').where({ lock_sha256: lockSha256, layout }).first());
}

import type { Db } from './knex.ts';
import { runPrepared, statement } from './prepared.ts';
import type { NotificationListener } from './notifications.ts';
import { noticedCache } from './noticedCache.ts';

/** Notified by every change to the compute profiles (a trigger, migration 045). */
export const PROFILES_CHANNEL = 'silico_compute_profiles_changed';

export interface ComputeProfileRow {
  id: string;
  title: string;
  kind: 'cpu' | 'gpu';
  vcpus: number;
  memory_mib: number;
  gpu: string | null;
  price_per_second_micros: number;
  max_runtime_seconds: number;
  schedule_to_start_seconds: number;
}

export async function listComputeProfiles(db: Db): Promise<ComputeProfileRow[]> {
  return db('compute_profiles').orderBy('sort');
}

export async function getComputeProfile(db: Db, id: string): Promise<ComputeProfileRow | undefined> {
  const [row] = await runPrepared<ComputeProfileRow>(db, GET_PROFILE, [id]);
  return row;
}
const GET_PROFILE = statement('get-compute-profile', `
  SELECT id, title, kind, vcpus, memory_mib, gpu, price_per_second_micros, max_runtime_seconds, schedule_to_start_seconds
    FROM compute_profiles WHERE id = $1`);

/** A compute profile by id, kept in process until the profiles change (noticedCache.ts); read-only. */
export type ProfileResolver = (id: string) => Promise<Readonly<ComputeProfileRow> | undefined>;

export function createProfileResolver(db: Db, listener: NotificationListener): ProfileResolver {
  return noticedCache(listener, PROFILES_CHANNEL, (id) => getComputeProfile(db, id), { max: 1000 });
}

import type { Db } from './knex.ts';

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
  return db('compute_profiles').where({ id }).first();
}

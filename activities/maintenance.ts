import type { Db } from '../storage/db/knex.ts';
import { purgeIdempotencyKeys } from '../storage/db/idempotency.ts';

/** Housekeeping of the state of record: expired idempotency keys and rate counters. */
export function createMaintenanceActivities(deps: { db: Db; idempotencyTtlSeconds: number }) {
  return {
    async purgeExpired(): Promise<{ idempotency_keys: number; rate_limits: number }> {
      const idempotency_keys = await purgeIdempotencyKeys(deps.db, deps.idempotencyTtlSeconds);
      const rate_limits = await deps.db('rate_limits').where('expire', '<', Date.now()).delete();
      return { idempotency_keys, rate_limits };
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;

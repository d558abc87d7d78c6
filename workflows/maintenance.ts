import { patched, proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities } from '../activities/maintenance.ts';
import type { ObjectSweepActivities } from '../activities/objectSweep.ts';
import type { EnvironmentArchiveActivities } from '../activities/environmentArchives.ts';

const { purgeExpired, reconcileOrphans, sweepLostRuns } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 5 },
});

const { sweepUnnamedObjects, sweepEnvironmentArchives } = proxyActivities<ObjectSweepActivities & EnvironmentArchiveActivities>({
  startToCloseTimeout: '30 minutes',
  retry: { maximumAttempts: 5 },
});

/** An object no record names is kept this long (far past any write in flight) before it is removed. */
const UNNAMED_OBJECT_GRACE_SECONDS = 24 * 3600;

/**
 * A shared environment archive no worker has published, taken or run in for this long is
 * removed: a month of storage for something a worker rebuilds in minutes when it is asked again.
 */
const ENVIRONMENT_ARCHIVE_RETENTION_SECONDS = 30 * 24 * 3600;

/** A record is left to its workflow this long before reconciliation asks whether it is gone. */
const RECONCILE_AFTER_SECONDS = 3600;

/**
 * Runs on an hourly Temporal schedule: forgets idempotency keys and counters past
 * retention, closes records whose workflow is gone, removes objects no record names and
 * environment archives unused past their retention.
 */
export async function maintenanceWorkflow(): Promise<{
  idempotency_keys: number; rate_limits: number; reconciled: Record<string, number>;
  unnamed_objects?: { removed: number; kept_young: number }; environment_archives?: { removed: number; kept: number };
}> {
  const purged = await purgeExpired();
  const reconciled = await reconcileOrphans(RECONCILE_AFTER_SECONDS);
  if (!patched('sweep-unnamed-objects')) return { ...purged, reconciled };
  const unnamed_objects = await sweepUnnamedObjects(UNNAMED_OBJECT_GRACE_SECONDS);
  if (!patched('sweep-environment-archives')) return { ...purged, reconciled, unnamed_objects };
  return { ...purged, reconciled, unnamed_objects, environment_archives: await sweepEnvironmentArchives(ENVIRONMENT_ARCHIVE_RETENTION_SECONDS) };
}

/** A run whose execution has had no live process this long is ended by the sweeper. */
export const SWEEP_AFTER_SECONDS = 60;

/** Runs each minute on a Temporal schedule: ends runs whose execution has no live process. */
export async function runSweepWorkflow(): Promise<{ swept: string[] }> {
  return { swept: await sweepLostRuns(SWEEP_AFTER_SECONDS) };
}

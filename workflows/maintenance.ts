import { proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities } from '../activities/maintenance.ts';

const { purgeExpired, reconcileOrphans, sweepLostRuns } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 5 },
});

/** A record is left to its workflow this long before reconciliation asks whether it is gone. */
const RECONCILE_AFTER_SECONDS = 3600;

/**
 * Runs on an hourly Temporal schedule: forgets idempotency keys and counters past
 * retention, and closes records whose workflow is gone.
 */
export async function maintenanceWorkflow(): Promise<{ idempotency_keys: number; rate_limits: number; reconciled: Record<string, number> }> {
  const purged = await purgeExpired();
  const reconciled = await reconcileOrphans(RECONCILE_AFTER_SECONDS);
  return { ...purged, reconciled };
}

/** A run whose execution has had no live process this long is ended by the sweeper. */
export const SWEEP_AFTER_SECONDS = 60;

/** Runs each minute on a Temporal schedule: ends runs whose execution has no live process. */
export async function runSweepWorkflow(): Promise<{ swept: string[] }> {
  return { swept: await sweepLostRuns(SWEEP_AFTER_SECONDS) };
}

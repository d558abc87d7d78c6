import { proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities } from '../activities/maintenance.ts';

const { purgeExpired } = proxyActivities<MaintenanceActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { maximumAttempts: 5 },
});

/** Runs on an hourly Temporal schedule: forgets idempotency keys and counters past retention. */
export async function maintenanceWorkflow(): Promise<{ idempotency_keys: number; rate_limits: number }> {
  return purgeExpired();
}

import { Client, Connection, WorkflowUpdateFailedError, WorkflowNotFoundError } from '@temporalio/client';
import type { Db } from '../storage/db/knex.ts';
import { stackSetting } from './localStackSetting.ts';
import { listHostings, type HostingRow, type HostingStatus } from '../storage/db/hosting.ts';
import { isoTime } from '../storage/ids.ts';
import { hostingWorkflowId } from '../kernel/workflowNames.ts';
import { hostingReviewUpdate, type Recorded, type Review } from '../workflows/hosting.ts';

/**
 * The operator's side of hosting: the review list, and approving or rejecting a public
 * or GPU hosting. A review is an update of the lab's lifecycle workflow (it refuses one
 * that is not awaiting review), so it needs Temporal: TEMPORAL_ADDRESS, or the local
 * stack's state file.
 */
export const HOSTING_USAGE = `  hosting list [--status awaiting_review|ready|...]   (default: every hosting still going)
  hosting approve LAB_ID [--note TEXT]              (public or GPU hosting awaiting review)
  hosting reject LAB_ID [--note TEXT]`;

export const hostingView = (h: HostingRow) => ({
  lab_id: h.lab_id, account_id: h.account_id, status: h.status, revision: h.revision, reference: h.reference, sha256: h.package_sha256,
  compute_profile: h.compute_profile, visibility: h.visibility, approval: h.approval, updated_at: isoTime(h.updated_at),
});

function temporalAddress(dataDir: string): string {
  const address = stackSetting(dataDir, 'TEMPORAL_ADDRESS', 'temporal_address');
  if (!address) throw new Error('set TEMPORAL_ADDRESS, or start the local stack first (npm start)');
  return address;
}

export async function listForReview(db: Db, status?: string): Promise<ReturnType<typeof hostingView>[]> {
  const statuses: HostingStatus[] = status ? [status as HostingStatus] : ['requested', 'checking', 'awaiting_review', 'ready', 'paused', 'retiring'];
  return (await listHostings(db, statuses)).map(hostingView);
}

/** Sends the operator's decision to the lab's lifecycle; a refusal comes back as its message. */
export async function reviewHosting(dataDir: string, labId: string, review: Review): Promise<Recorded> {
  const connection = await Connection.connect({ address: temporalAddress(dataDir) });
  try {
    const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
    return await client.workflow.getHandle(hostingWorkflowId(labId)).executeUpdate(hostingReviewUpdate, { args: [review] });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) throw new Error(err.cause?.message ?? err.message);
    if (err instanceof WorkflowNotFoundError) throw new Error(`no hosting lifecycle for ${labId}`);
    throw err;
  } finally {
    await connection.close();
  }
}

import { ActivityFailure, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { DatasetActivities } from '../activities/datasets.ts';

const acts = proxyActivities<DatasetActivities>({ startToCloseTimeout: '30 minutes', heartbeatTimeout: '1 minute', retry: { maximumAttempts: 5 } });
const control = proxyLocalActivities<DatasetActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });

/**
 * Workflow `dataset-<id>`: re-hash every member in the store, then the version stands or
 * fails. A verification that cannot finish (the store unavailable past every retry) ends
 * the version as failed with the reason, so a retry registers it again.
 */
export async function datasetRegistrationWorkflow(args: { datasetId: string }): Promise<string> {
  let problems;
  try {
    problems = await acts.verifyMembers(args.datasetId);
  } catch (err) {
    const reason = err instanceof ActivityFailure ? (err.cause?.message ?? err.message) : String(err);
    problems = [{ file_id: '', problem: `the members could not be verified: ${reason}` }];
  }
  await control.finishDataset(args.datasetId, problems);
  return problems.length ? 'failed' : 'registered';
}

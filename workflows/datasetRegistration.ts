import { proxyActivities } from '@temporalio/workflow';
import type { DatasetActivities } from '../activities/datasets.ts';

const acts = proxyActivities<DatasetActivities>({ startToCloseTimeout: '30 minutes', heartbeatTimeout: '1 minute', retry: { maximumAttempts: 5 } });

/** Workflow `dataset-<id>`: re-hash every member in the store, then the version stands or fails. */
export async function datasetRegistrationWorkflow(args: { datasetId: string }): Promise<string> {
  const problems = await acts.verifyMembers(args.datasetId);
  await acts.finishDataset(args.datasetId, problems);
  return problems.length ? 'failed' : 'registered';
}

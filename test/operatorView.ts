import { Client, Connection } from '@temporalio/client';
import { workflowMetadataQuery } from '@temporalio/workflow';
import { stateQuery } from '../workflows/explain.ts';

/**
 * What an operator reads of a workflow in the Temporal UI: its summary and details as
 * started, its current details, and, for a long-lived one (`state: true`), its `state`
 * query. Queried on the shared stack's Temporal.
 */
export async function operatorView(workflowId: string, opts: { state?: boolean } = {}): Promise<{
  summary: string | undefined; details: string | undefined; current: string | undefined; state?: Record<string, unknown>;
}> {
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  try {
    const handle = new Client({ connection }).workflow.getHandle(workflowId);
    const described = await handle.describe();
    return {
      summary: await described.staticSummary(), details: await described.staticDetails(),
      current: (await handle.query(workflowMetadataQuery)).currentDetails || undefined,
      ...(opts.state ? { state: await handle.query(stateQuery) } : {}),
    };
  } finally {
    await connection.close();
  }
}

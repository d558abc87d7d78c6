import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { WorkflowState } from './maintenance.ts';

/** Asks Temporal whether a workflow is open, closed or was never there. */
export function workflowStateOf(client: Client): WorkflowState {
  return async (workflowId) => {
    try {
      const d = await client.workflow.getHandle(workflowId).describe();
      return d.status.name === 'RUNNING' ? 'open' : 'closed';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'missing';
      throw err;
    }
  };
}

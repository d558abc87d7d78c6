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

/** What the sweeper asks Temporal of a run's execution, and the one thing it may do to it. */
export interface ExecutionProbe {
  /** The latest heartbeat of the workflow's pending activities, or null when none has one. */
  lastHeartbeat(workflowId: string): Promise<Date | null>;
  terminate(workflowId: string, reason: string): Promise<void>;
}

export function executionProbeOf(client: Client): ExecutionProbe {
  return {
    async lastHeartbeat(workflowId) {
      const d = await client.workflow.getHandle(workflowId).describe();
      const beats = (d.raw.pendingActivities ?? []).map((a) => a.lastHeartbeatTime).filter((t) => t?.seconds != null)
        .map((t) => new Date(Number(t!.seconds) * 1000 + Math.floor((t!.nanos ?? 0) / 1e6)));
      return beats.length ? new Date(Math.max(...beats.map((b) => b.getTime()))) : null;
    },
    async terminate(workflowId, reason) {
      try {
        await client.workflow.getHandle(workflowId).terminate(reason);
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },
  };
}

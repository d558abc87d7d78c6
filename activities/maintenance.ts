import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { BIOLOGY_STAGING_PREFIX } from './biology/activities.ts';
import { purgeIdempotencyKeys } from '../storage/db/idempotency.ts';
import { purgeExpiredMcpTasks } from '../storage/db/mcpTasks.ts';
import { purgeRateLimits } from '../storage/db/rateLimits.ts';
import { openRecords, type OpenRecord } from '../storage/db/reconciliation.ts';
import { finishRun } from '../storage/runLifecycle.ts';
import { failPublication } from '../storage/db/publications.ts';
import { finishDataset } from '../storage/db/datasets.ts';
import { datasetWorkflowId, experimentWorkflowId, hostingWorkflowId, invocationWorkflowId, publicationWorkflowId, purchaseWorkflowId, runWorkflowId, sessionWorkflowId } from '../kernel/workflowNames.ts';
import { expirePurchase } from '../storage/db/purchases.ts';
import { finishInvocation } from '../storage/db/hostedInvocations.ts';
import { recordHosting } from '../storage/db/hosting.ts';
import { completeExperiment } from '../storage/db/experiments.ts';
import { failSession } from '../storage/db/sessions.ts';
import { appendEvent, staleRuns } from '../storage/db/runs.ts';
import type { ExecutionProbe } from './workflowState.ts';

/** Whether a workflow still runs, has closed, or was never there (Temporal's describe). */
export type WorkflowState = (workflowId: string) => Promise<'open' | 'closed' | 'missing'>;

const WORKFLOW_ID: Record<OpenRecord['kind'], (id: string) => string> = {
  run: runWorkflowId, publication: publicationWorkflowId, dataset: datasetWorkflowId, experiment: experimentWorkflowId, invocation: invocationWorkflowId, hosting: hostingWorkflowId,
  session: sessionWorkflowId, purchase: purchaseWorkflowId,
};
/** How long a biology fetch's staged records may outlive it before the hourly purge removes them. */
const STAGING_KEPT_MS = 24 * 3600 * 1000;
const GONE = 'Its workflow ended without recording an ending (or never started); closed by the hourly reconciliation.';
/** Why an open session was failed: its workflow, which alone takes its changes, is not there. */
const sessionGone = (workflowId: string, state: 'closed' | 'missing') => (state === 'missing'
  ? `Its workflow ${workflowId} does not exist (it never started, or is gone), so no change can reach this session; failed by the hourly reconciliation. What was recorded stays readable.`
  : `Its workflow ${workflowId} has closed without completing this session, so no change can reach it; failed by the hourly reconciliation. What was recorded stays readable.`);

/**
 * Housekeeping of the state of record: expired idempotency keys, rate counters and MCP tasks, and
 * records whose workflow is gone, closed truthfully (a run fails with nothing charged, a
 * publication fails and frees its version, a dataset version fails, a study whose runs
 * have all ended is completed, an invocation fails with nothing charged, a hosting fails,
 * an open session fails saying whether its workflow closed or never existed).
 */
export function createMaintenanceActivities(deps: { db: Db; objects: ObjectStore; idempotencyTtlSeconds: number; workflowState: WorkflowState; executions: ExecutionProbe; stagingKeptMs?: number }) {
  return {
    async purgeExpired(): Promise<{ idempotency_keys: number; rate_limits: number; staged_objects: number; mcp_tasks: number }> {
      const idempotency_keys = await purgeIdempotencyKeys(deps.db, deps.idempotencyTtlSeconds);
      const rate_limits = await purgeRateLimits(deps.db);
      // A biology fetch removes its staging when it ends; what a fetch whose worker was
      // lost for good left behind goes after a day (fetches last seconds).
      const staged_objects = await deps.objects.deletePrefix(BIOLOGY_STAGING_PREFIX, new Date(Date.now() - (deps.stagingKeptMs ?? STAGING_KEPT_MS)));
      const mcp_tasks = await purgeExpiredMcpTasks(deps.db);
      return { idempotency_keys, rate_limits, staged_objects, mcp_tasks };
    },

    /** Closes records left open by a workflow that is gone; returns how many of each. */
    async reconcileOrphans(olderThanSeconds: number): Promise<Record<OpenRecord['kind'], number>> {
      const closed = { run: 0, publication: 0, dataset: 0, experiment: 0, invocation: 0, hosting: 0, session: 0, purchase: 0 };
      for (const r of await openRecords(deps.db, olderThanSeconds)) {
        const workflowId = WORKFLOW_ID[r.kind](r.id);
        const state = await deps.workflowState(workflowId);
        if (state === 'open') continue;
        // A study's run waiting for its turn has no workflow yet; its study's workflow has it.
        if (r.experimentId && (await deps.workflowState(experimentWorkflowId(r.experimentId))) === 'open') continue;
        if (r.kind === 'run') await finishRun(deps.db, { runId: r.id, status: 'failed', error: { code: 'internal_error', message: GONE }, computeSeconds: 0 });
        else if (r.kind === 'publication') await failPublication(deps.db, r.id, [{ severity: 'blocking', code: 'publication_error', message: GONE, path: null }]);
        else if (r.kind === 'dataset') await finishDataset(deps.db, r.id, [{ file_id: '', problem: GONE }]);
        else if (r.kind === 'invocation') await finishInvocation(deps.db, { id: r.id, status: 'failed', error: { code: 'internal_error', message: GONE }, computeSeconds: 0 });
        else if (r.kind === 'hosting') await recordHosting(deps.db, r.id, r.generation!, { status: 'failed', pending_action: null }, { kind: 'failed', actor: 'reconciliation', message: GONE });
        // Past its expiry with no workflow to expire it: no credit, as its workflow would have.
        else if (r.kind === 'purchase') {
          if ((await expirePurchase(deps.db, r.id)).status !== 'expired') continue;
        } else if (r.kind === 'session') {
          // Completed meanwhile (its workflow ends right after recording that): nothing to close.
          if (!(await failSession(deps.db, r.id, { code: 'internal_error', message: sessionGone(workflowId, state) }))) continue;
        } else if (!(await completeExperiment(deps.db, r.id))) continue;
        closed[r.kind] += 1;
      }
      return closed;
    },

    /**
     * The sweeper: ends every run whose execution has had no live process for
     * `staleSeconds` (its alive_at, and Temporal's last heartbeat of it, both that old),
     * says so in its events, and stops its workflow. A run being cancelled ends
     * cancelled; any other fails `lab_lost`. Charged for the time it had a process.
     * `runIds` narrows a pass to those runs (a targeted sweep; the schedule's covers all).
     */
    async sweepLostRuns(staleSeconds: number, runIds?: string[]): Promise<string[]> {
      const swept: string[] = [];
      for (const r of await staleRuns(deps.db, staleSeconds, runIds)) {
        const workflowId = runWorkflowId(r.id);
        const state = await deps.workflowState(workflowId);
        if (state === 'open') {
          const beat = await deps.executions.lastHeartbeat(workflowId);
          if (beat && Date.now() - beat.getTime() < staleSeconds * 1000) continue;
        }
        const silent = Math.round((Date.now() - r.alive_at.getTime()) / 1000);
        const message = `The run's execution has had no live process for ${silent} s (its lab or its worker is gone): ended by the sweeper.`;
        await appendEvent(deps.db, r.id, 'log', message, { stream: 'worker', level: 'error', swept: true });
        if (state === 'open') await deps.executions.terminate(workflowId, message);
        const computeSeconds = r.started_at ? Math.max(0, (r.alive_at.getTime() - r.started_at.getTime()) / 1000) : 0;
        await finishRun(deps.db, r.status === 'cancelling'
          ? { runId: r.id, status: 'cancelled', computeSeconds }
          : { runId: r.id, status: 'failed', error: { code: 'lab_lost', message }, computeSeconds });
        swept.push(r.id);
      }
      return swept;
    },
  };
}

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;

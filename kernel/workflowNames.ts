/**
 * Names shared by workflows, the worker and the API. One place, so a task queue or a
 * search attribute is never spelled twice.
 */
export const CONTROL_TASK_QUEUE = 'control';

/**
 * Task queue of lone runs' workflows: polled by every worker process and by a run worker
 * inside every api process, so a run the api accepts starts eagerly (its first workflow
 * task comes back with the start, to that api's own worker; docs/decisions.md).
 */
export const RUN_TASK_QUEUE = 'runs';

/** Task queue on which a compute profile's lab executions run. */
export function computeTaskQueue(profileId: string): string {
  return `compute-${profileId}`;
}

/**
 * Task queue on which a compute profile's workers hold ready deployments (one long
 * activity each): apart from lab executions, so standing deployments never take the
 * slots runs execute in.
 */
export function servingTaskQueue(profileId: string): string {
  return `serve-${profileId}`;
}

/** Custom search attributes registered with the Temporal server at stack start. */
export const SEARCH_ATTRIBUTES = {
  SilicoAccount: 'Keyword',
  SilicoKind: 'Keyword',
  SilicoCapabilityRef: 'Keyword',
  SilicoSummary: 'Keyword',
} as const;

export const MAINTENANCE_SCHEDULE_ID = 'silico-maintenance';
export const RUN_SWEEP_SCHEDULE_ID = 'silico-run-sweep';

/** Workflow id of a run: the resource id, so operators find it in the Temporal UI. */
export function runWorkflowId(runId: string): string {
  return `run-${runId}`;
}

/** Workflow id of a dataset version's registration. */
export function datasetWorkflowId(datasetId: string): string {
  return `dataset-${datasetId}`;
}

/** Workflow id of a publication. */
export function publicationWorkflowId(publicationId: string): string {
  return `publication-${publicationId}`;
}

/** Workflow id of a study: `experiment-<id>`. */
export function experimentWorkflowId(experimentId: string): string {
  return `experiment-${experimentId}`;
}

/** Workflow id of one passport's build. */
export function passportWorkflowId(passportId: string): string {
  return `passport-${passportId}`;
}

/** Workflow id of a lab's hosting lifecycle (one lifecycle at a time per lab). */
export function hostingWorkflowId(labId: string): string {
  return `hosting-${labId}`;
}

/** Workflow id of one hosted invocation. */
export function invocationWorkflowId(invocationId: string): string {
  return `invocation-${invocationId}`;
}

/** The failure type of a lab execution stopped by its worker's shutdown (rescheduled, not failed). */
export const WORKER_SHUTDOWN = 'WorkerShutdown';

/** Workflow id of one biology search (short-lived; the api awaits it). */
export function biologySearchWorkflowId(searchId: string): string {
  return `biology-search-${searchId}`;
}

/** Workflow id of one biology fetch: the fetch's id, so a retried request finds it. */
export function biologyFetchWorkflowId(fetchId: string): string {
  return `biology-fetch-${fetchId}`;
}

/** Workflow id of the inspection of a PEtab problem: its tree's digest and the caller's, so the same problem asked again joins it. */
export function petabInspectWorkflowId(key: string): string {
  return `petab-inspect-${key}`;
}

/** Workflow id of a session: the resource id. */
export function sessionWorkflowId(sessionId: string): string {
  return `session-${sessionId}`;
}

/** Workflow id of a purchase of compute (every run of it: a late event starts another). */
export function purchaseWorkflowId(purchaseId: string): string {
  return `purchase-${purchaseId}`;
}

/** Workflow id of one generation of a webhook delivery: a second start of the same one is a no-op. */
export function webhookDeliveryWorkflowId(deliveryId: string, generation: number): string {
  return `webhook-delivery-${deliveryId}-${generation}`;
}

/** What a run's workflow needs to schedule its execution: its compute profile and the bounds of its wait and run. */
export interface RunSchedule {
  profile: string;
  maxRuntimeSeconds: number;
  scheduleToStartSeconds: number;
}

/**
 * A run workflow's input. Runs accepted since issue 35 carry their schedule, and
 * `running` when the acceptance took their concurrency slot; older ones carry only the
 * id, and their workflow reads the schedule and waits for a slot itself.
 */
export interface RunWorkflowInput {
  runId: string;
  schedule?: RunSchedule;
  running?: boolean;
}

import type { ToolContext } from '../tools/tool.ts';
import { experimentWorkflowId, runWorkflowId } from '../../kernel/workflowNames.ts';
import { runCancelledSignal } from '../../workflows/studyBatches.ts';

/**
 * Asks what executes a run to stop it: its own workflow (a lone run, or a study's from
 * before batches), and for a study's run its study's workflow, which ends a run of its
 * batches at once whatever state its execution is in (one from before batches ignores the
 * signal). A workflow already gone is fine; Temporal unreachable is 503 before anything
 * changed.
 */
export async function askRunToStop(ctx: ToolContext, run: { id: string; experiment_id: string | null }): Promise<void> {
  await ctx.deps.temporal.cancelWorkflow(runWorkflowId(run.id));
  if (run.experiment_id) {
    await ctx.deps.temporal.signalWorkflow(experimentWorkflowId(run.experiment_id), runCancelledSignal, [run.id]);
  }
}

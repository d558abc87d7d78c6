import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, WorkflowIdReusePolicy } from '@temporalio/common';
import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import { CONTROL_TASK_QUEUE, petabInspectWorkflowId } from '../../kernel/workflowNames.ts';
import { petabInspectWorkflow } from '../../workflows/petab.ts';
import type { PetabInspection } from '../../activities/petab/activities.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { digestJson } from '../../storage/digest.ts';
import type { Tree } from '../../storage/trees.ts';
import type { ToolContext } from '../tools/tool.ts';
import { ApiError } from '../errors.ts';
import { WorkflowStillRunning } from '../temporal.ts';

/** How long a prepare waits for the inspection (the toolkit's imports take seconds; a first environment build takes longer). */
const INSPECT_WAIT_MS = 90_000;

/** An inspection that could not be made, and why: the deployment's, not the problem's. */
export interface InspectionRefused { refused: { code: string; message: string } }

/**
 * The engine's inspection of a problem (lint, then description and nominal value), from a
 * short workflow on a compute worker. Its id is the problem's digest and the caller's, so
 * the same problem asked again, by a retry or a second plan, is answered by the one
 * inspection. A refusal of the deployment (no toolkit, no sandbox) is returned as such;
 * not done in time is 503 with Retry-After, and the same request then joins it.
 */
export async function inspectProblem(ctx: ToolContext, tree: Tree, yaml: string): Promise<PetabInspection | InspectionRefused> {
  const key = digestJson({ account: ctx.caller.account.id, tree, yaml }).slice(0, 32);
  const workflowId = petabInspectWorkflowId(key);
  try {
    return await ctx.deps.temporal.executeWorkflow(petabInspectWorkflow, {
      // The account, so its inspections fork from a warm instance of the engine of its own.
      taskQueue: CONTROL_TASK_QUEUE, workflowId, args: [{ tree, yaml, account: ctx.caller.account.id }],
      workflowExecutionTimeout: '10 minutes',
      // One that completed answers again; one that failed (a worker lost) is tried anew.
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      ...workflowMetadata(ctx.deps.config.baseUrl, {
        attributes: { account: ctx.caller.account.id, kind: 'petab_inspect' },
        // The file names are the account's words: the summary counts them.
        summary: `PEtab inspection of ${Object.keys(tree).length} files for ${ctx.caller.account.id}`,
        facts: [`The problem's files are the tree of digest ${key}; the engine runs sandboxed in the PEtab toolkit on a compute worker.`],
      }),
    }, ctx.waitMs ?? INSPECT_WAIT_MS, { join: true });
  } catch (err) {
    if (err instanceof WorkflowStillRunning) {
      throw new ApiError(503, 'inspection_in_progress', 'The problem is still being checked; send the same request again for the plan.', null,
        { retryable: true, retry_after_seconds: 5 }, { 'Retry-After': '5' });
    }
    const cause = err instanceof WorkflowFailedError && err.cause instanceof ActivityFailure ? err.cause.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) return { refused: { code: cause.type ?? 'inspection_failed', message: cause.message } };
    throw err;
  }
}

/**
 * The plan's findings of an inspection, in the petab library's words: each lint error
 * blocks (`petab_invalid`), each warning warns, both located in the file, row and column
 * the lint's message concerns (paths as the request gave them); after a clean lint, the
 * engine's failure blocks as `petab_unsupported` (the simulator's importer refuses what
 * the format allows), and the value at nominal is said.
 */
export function inspectionFindings(inspection: PetabInspection | InspectionRefused, asGiven: (p: string) => string): Finding[] {
  if ('refused' in inspection) {
    const { code, message } = inspection.refused;
    return [{ severity: 'blocking', code: code === 'toolkit_unavailable' ? 'environment_unavailable' : code, message: `The problem could not be checked here: ${message}`, path: null }];
  }
  const lint: Finding[] = inspection.findings.map((f) => ({
    severity: f.level === 'error' ? 'blocking' : 'warning', code: f.level === 'error' ? 'petab_invalid' : 'petab_lint_warning',
    message: `The petab library (${inspection.versions.petab ?? '?'}) says: ${f.message}`,
    path: f.file === null ? null : asGiven(f.file),
    location: { file: f.file === null ? null : asGiven(f.file), row: f.row, column: f.column },
  }));
  if (lint.some((f) => f.severity === 'blocking')) return lint;
  if (inspection.error) {
    return [...lint, {
      severity: 'blocking', code: inspection.error.code === 'problem_failed' ? 'petab_unsupported' : 'petab_inspection_failed',
      message: `The problem passes the petab library's lint, but ${inspection.error.code === 'problem_failed' ? 'its simulator (libroadrunner through pyPESTO) refuses it' : 'its evaluation failed'}: ${inspection.error.message}`,
      path: null,
    }];
  }
  const nll = inspection.nominal?.nll;
  return [...lint, {
    severity: 'info', code: 'petab_nominal_nll',
    message: nll === null || nll === undefined
      ? 'At the nominal parameters a simulation fails: the negative log-likelihood is not finite there (a calibration starts elsewhere).'
      : `At the nominal parameters the negative log-likelihood is ${nll} (the petab library's own log-likelihood of the same simulations: ${inspection.nominal!.petab_llh}).`,
    path: null,
  }];
}

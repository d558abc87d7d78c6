import type { Deps, Caller } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { acceptAndStart, type Acceptance } from '../acceptAndStart.ts';
import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import { fairShare } from '../../kernel/fairShares.ts';
import { planUnavailable, planUsed, resultOf } from '../plans.ts';
import { spendCapRefusal, studyCapFindings } from '../spendCaps.ts';
import { recheckProposal } from '../runs/prepare.ts';
import { acceptExperiment as recordAcceptance, getExperiment, unacceptExperiment, type ExperimentRow, type RunSet } from '../../storage/db/experiments.ts';
import type { NewRun } from '../../storage/db/runs.ts';
import type { StudyDesign } from '../../storage/studyDesign.ts';
import { isSqlState, SQLSTATE } from '../../storage/db/sqlStates.ts';
import { newId, newUuid } from '../../storage/ids.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { CONTROL_TASK_QUEUE, experimentWorkflowId } from '../../kernel/workflowNames.ts';
import { armRunProposal, type ExperimentProposal } from './prepare.ts';
import { experimentWorkflow } from '../../workflows/experiment.ts';
import { studyWorkflow } from '../../workflows/study.ts';

/** One run of a study's arm: its record, its arm and which replicate it is. */
export type ArmRun = { run: NewRun; arm_index: number; replicate: number };

function runRecord(experimentId: string, caller: { account: { id: string }; key: { id: string } }, arm: ExperimentProposal['arms'][number], seed: number, metadata: Record<string, string>): Omit<NewRun, 'id'> {
  const run = armRunProposal(arm, seed);
  return {
    account_id: caller.account.id, key_id: caller.key.id, kind: run.kind, ref: run.ref, resolved_ref: run.resolved_ref, release_id: null,
    workspace_id: arm.workspace_id, revision_id: arm.revision_id, package_sha256: run.package_sha256, inputs: run.inputs,
    metadata, compute_profile: run.compute_profile,
    max_runtime_seconds: run.max_runtime_seconds, reserved_micros: run.estimated_max_micros, seed: run.seed, experiment_id: experimentId, plan_id: null, runtime_sha256: run.runtime_sha256,
  };
}

/**
 * A question study's runs: one lab, as many runs as its design takes, alike but for
 * their ids (each receives its parameter set when the study's workflow asks for it), so
 * one record and their number; Postgres gives them their ids.
 */
export function questionRuns(experimentId: string, caller: { account: { id: string }; key: { id: string } }, p: ExperimentProposal & { design: StudyDesign }): RunSet {
  const arm = p.arms[0]!;
  return { run: runRecord(experimentId, caller, arm, arm.seeds[0]!, { study: p.design.kind }), count: p.design.run_count };
}

/**
 * A study of arms' runs in start order: replicate 0 of every arm, then replicate 1 of
 * every arm, and so on, so early results already cover each arm.
 */
function armRuns(experimentId: string, caller: { account: { id: string }; key: { id: string } }, p: ExperimentProposal): ArmRun[] {
  const most = Math.max(...p.arms.map((a) => a.replicates));
  const out: ArmRun[] = [];
  for (let k = 0; k < most; k++) {
    p.arms.forEach((arm, a) => {
      if (k >= arm.replicates) return;
      out.push({ arm_index: a, replicate: k, run: { id: newUuid(), ...runRecord(experimentId, caller, arm, arm.seeds[Math.min(k, arm.seeds.length - 1)]!, { experiment_arm: arm.label, replicate: String(k) }) } });
    });
  }
  return out;
}

/** A study's one line in the Temporal UI: what it is, of which lab, on which profile, whose, and what it reserved. */
function experimentSummary(proposal: ExperimentProposal, account: string): string {
  const arm = proposal.arms[0]!;
  const d = proposal.design;
  const what = d
    ? `${d.kind.replace('_', ' ')} study (${d.kind === 'sensitivity' ? d.method : d.optimizer}, ${proposal.run_count} runs)`
    : `comparison of ${proposal.arms.length} arms (${proposal.run_count} runs)`;
  return `${what} of ${arm.resolved_ref} on ${arm.compute_profile} for ${account}, $${microsToUsd(proposal.estimated_max_micros)} reserved`;
}

/** A study opened, and whether this request accepted it: then it stands as accepted, every run queued and nothing settled. */
export interface Opened { experiment: ExperimentRow; acceptedNow: boolean }

/**
 * Opens an approved study: each arm is rechecked as its lone run would be, then in one
 * transaction the plan is consumed, the study recorded and every run accepted with its
 * own reservation (402 and no run at all when the balance cannot cover the whole study);
 * then its workflow `experiment-<id>` starts. When Temporal cannot take it, the
 * acceptance is undone and the answer is 503, so a retry completes it.
 */
export async function openExperiment(deps: Deps, caller: Caller, planId: string, proposal: ExperimentProposal): Promise<Opened> {
  for (const arm of proposal.arms) await recheckProposal(deps, caller, armRunProposal(arm), { caps: false });
  const capped = await studyCapFindings(deps, caller, proposal.arms, proposal.estimated_max_micros);
  if (capped.length) throw planUnavailable(`A spend cap changed since this study was prepared: ${capped.map((f) => f.message).join(' ')} Prepare it again.`, null);
  const id = newId('exp');
  const common: Omit<Acceptance<Opened, typeof experimentWorkflow>, 'workflow' | 'start'> = {
    record: async () => ({ acceptedNow: true, experiment: await recordAcceptance(deps.db, {
      id, account_id: caller.account.id, name: proposal.name, goal: proposal.goal, arms: proposal.arms, plan_id: planId,
      workspace_ids: [...new Set(proposal.arms.map((a) => a.workspace_id))], reserved_micros: proposal.estimated_max_micros, design: proposal.design,
    }, proposal.design ? questionRuns(id, caller, { ...proposal, design: proposal.design }) : armRuns(id, caller, proposal)) }),
    refusal: async (err) => {
      if (isSqlState(err, SQLSTATE.planUsed)) return planUsed(await resultOf(deps.db, caller.account.id, planId));
      const refused = spendCapRefusal(err, true);
      if (refused) return refused;
      if (isSqlState(err, SQLSTATE.insufficientCompute)) {
        return errors.insufficientCredits({
          what: 'this study', usd: microsToUsd(proposal.estimated_max_micros), note: ` (${proposal.run_count} runs); no run was created`, details: { run_count: proposal.run_count },
          resolution: 'Add compute to the account, or prepare a study with fewer arms, replicates or a shorter max_runtime_seconds.',
        });
      }
      return null;
    },
    // The study's runs go with it.
    undo: () => unacceptExperiment(deps.db, id),
    // Recorded by an earlier attempt of this plan and not yet ended: it may never have started.
    earlier: async () => {
      const ref = /^experiment:(.+)$/.exec((await resultOf(deps.db, caller.account.id, planId)) ?? '');
      const row = ref ? await getExperiment(deps.db, ref[1]!, caller.account.id) : undefined;
      return row && row.status === 'running' && !row.completed_at ? { experiment: row, acceptedNow: false } : null;
    },
  };
  const start = ({ experiment: row }: Opened) => ({
    taskQueue: CONTROL_TASK_QUEUE,
    workflowId: experimentWorkflowId(row.id),
    args: [{ experimentId: row.id }] as [{ experimentId: string }],
    priority: fairShare(caller.account.id),
    ...workflowMetadata(deps.config.baseUrl, {
      attributes: { account: caller.account.id, kind: 'experiment', ref: [...new Set(proposal.arms.map((a) => a.resolved_ref.split('@')[0]))].join(' ').slice(0, 1000) },
      summary: experimentSummary(proposal, caller.account.id),
      facts: [`Experiment ${row.id} of account ${caller.account.id}.`],
      resource: `/experiments/${row.id}`, page: `experiments/${row.id}`,
    }),
  });
  // A study that answers a question is asked, run and told in batches by its own workflow.
  return proposal.design
    ? acceptAndStart(deps.temporal, { ...common, workflow: studyWorkflow, start })
    : acceptAndStart(deps.temporal, { ...common, workflow: experimentWorkflow, start });
}

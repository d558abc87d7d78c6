import type { ToolDef, ToolContext } from '../tools/tool.ts';
import { str, limit, cursor, arr, obj, uuid, planExecute, id } from '../schemas/common.ts';
import { errors } from '../errors.ts';
import { approvedPlan, planView, PLAN_TTL_SECONDS } from '../plans.ts';
import { createPlan } from '../../storage/db/plans.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { decodeCursor, pageBody } from '../pagination.ts';
import { MAX_SEED, prepareExperiment, type ExperimentProposal } from './prepare.ts';
import { openExperiment } from './accept.ts';
import { prepareStudy } from './studyPrepare.ts';
import { calibrationRequest, petabCalibrationRequest, sensitivityRequest, studyLabRequest } from './studySchemas.ts';
import { armView, experimentSummary, experimentView } from './view.ts';
import {
  cancelQueuedExperimentRuns, closeExperiment, describeExperiment, detachRuns, experimentRuns, getExperiment, listExperiments, lockBalanceFirst, runningExperimentRuns, runTotals, type ExperimentRow,
} from '../../storage/db/experiments.ts';
import { compareArms } from '../../storage/experimentComparison.ts';
import { armOutcomes, noOutcomes, settledMicros } from '../../storage/db/armOutcomes.ts';
import { experimentPage, experimentPlan, experimentRecord, includePoints, includeRuns, studyRunPage } from './schemas.ts';
import { RUN_STATUSES } from '../runs/schemas.ts';
import { listRunsOfStudy } from './runList.ts';
import { storeComparisonArtifacts } from '../../storage/experimentArtifacts.ts';
import { rewriteDesignCsv } from '../../storage/studyArtifacts.ts';
import { markRunCancelling } from '../../storage/db/runs.ts';
import { askRunToStop } from '../runs/stop.ts';

const arm = obj({
  label: str(100, { minLength: 1 }), workspace_id: uuid, revision_id: uuid, inputs: { type: 'object', maxProperties: 256 },
  compute_profile_id: str(64), max_runtime_seconds: { type: 'integer', minimum: 1 },
  replicates: { type: 'integer', minimum: 1, maximum: 10, description: 'Runs of this arm (default 1).' },
  seed: { type: 'integer', minimum: 0, maximum: MAX_SEED, description: 'Replicate k runs with seed + k (chosen at plan time when absent).' },
  fixed_seed: { type: 'boolean', description: 'Every replicate runs with `seed` itself (to check reproducibility).' },
}, ['label', 'workspace_id', 'revision_id']);

const experimentPath = { experiment_id: id('exp') };

/** How much of a study an answer holds: its runs, and its analysis's per-point lists (agents read both a page or a file at a time). */
const viewQuery = { include_runs: includeRuns, include_points: includePoints };
const AGENT_VIEW = { include_runs: false, include_points: false };

export const experimentTools: ToolDef[] = [
  {
    name: 'experiment_list', scope: 'runs:read', readOnly: true,
    description: "List the caller's studies with run totals, most recently changed first.",
    output: experimentPage,
    input: { query: { status: { enum: ['running', 'completed', 'closed', null] }, workspace_id: { type: ['string', 'null'], format: 'uuid' }, limit, cursor } },
  },
  {
    name: 'experiment_prepare', scope: 'runs:write', readOnly: true,
    description: 'Plan a study: arms compared (each preflighted exactly as a lone run), or one lab\'s sensitivity to its parameters or its calibration to a dataset version; digest the whole proposal with its whole-study price. Nothing is queued or reserved.',
    output: experimentPlan,
    input: {
      body: obj({
        name: str(200, { minLength: 1 }), goal: str(2000),
        arms: { ...arr(arm, { minItems: 1, maxItems: 20 }), description: 'Arms to compare (a study of arms).' },
        lab: { ...studyLabRequest, description: 'The lab a sensitivity or calibration study varies.' },
        sensitivity: sensitivityRequest,
        calibration: calibrationRequest,
        petab_calibration: petabCalibrationRequest,
      }, ['name'], { description: 'Exactly one of `arms`, `sensitivity`, `calibration` (these two with `lab`) or `petab_calibration`.' }),
    },
  },
  {
    name: 'experiment_create', scope: 'runs:write', readOnly: false, idempotent: true,
    description: 'Open the approved study: reserve it whole (402 and no run when short) and queue exactly its arms x replicates under that approval.',
    output: experimentRecord,
    input: { query: viewQuery, body: planExecute },
    agentDefaults: AGENT_VIEW,
  },
  {
    name: 'experiment_get', scope: 'runs:read', readOnly: true,
    description: 'Read a study: arms, run totals, the comparison across arms (completed runs only; descriptive statistics), its design and analysis. Its runs: experiment_run_list, or include_runs.',
    output: experimentRecord,
    input: { path: experimentPath, query: viewQuery },
    agentDefaults: AGENT_VIEW,
  },
  {
    name: 'experiment_run_list', scope: 'runs:read', readOnly: true,
    description: 'List a study\'s runs with the parameter set each was given and what it told the study (each studied output, or the loss), sorted by start order, any parameter, output or the loss (runs without a value last), filtered by status, a page at a time.',
    output: studyRunPage,
    input: {
      path: experimentPath,
      query: {
        status: { enum: [...RUN_STATUSES, null], description: 'Only runs in this status.' },
        sort: { ...str(300), description: '`position` (default: the order the study starts its runs), `params.<name>`, `outputs.<key>` (sensitivity, e.g. `outputs.recovered.final`) or `loss` (calibration).' },
        order: { enum: ['asc', 'desc'], default: 'asc', description: 'Ascending (default) or descending; ties keep start order.' },
        limit, cursor,
      },
    },
  },
  {
    name: 'experiment_update', scope: 'runs:write', readOnly: false, idempotent: true, destructive: true,
    description: 'Rename, re-goal or close a study (closing cancels its queued runs, and running ones only with cancel_running), or detach runs; deletes nothing.',
    output: experimentRecord,
    agentDefaults: AGENT_VIEW,
    input: {
      path: experimentPath,
      query: viewQuery,
      body: obj({
        name: str(200, { minLength: 1 }), goal: str(2000), status: { const: 'closed' }, detach_run_ids: arr(uuid, { minItems: 1, maxItems: 200, uniqueItems: true }),
        cancel_running: { type: 'boolean', description: 'With status closed: also cancel runs already running (only elapsed compute is charged).' },
      }, [], { minProperties: 1 }),
    },
  },
];

async function ownedExperiment(ctx: ToolContext, experimentId: string): Promise<ExperimentRow> {
  const e = await getExperiment(ctx.deps.db, experimentId, ctx.caller.account.id);
  if (!e) throw errors.notFound('experiment_not_found', 'experiment', 'experiment_id');
  return e;
}

/** Per-run entries an answer holds at most (include_runs); a study of arms has at most 200 runs. */
export const MAX_VIEW_RUNS = 1000;

/**
 * A study's answer: bounded whatever its size; its runs only on request, and only when
 * they fit (else the listing pages them). `acceptedRuns`, when this request has just
 * accepted the study with that many runs, is what it stands at (every run queued, nothing
 * settled) and is not read back: at 100,000 runs that reading was a tenth of the
 * acceptance's time.
 */
async function fullView(ctx: ToolContext, e: ExperimentRow, input: { include_runs?: boolean; include_points?: boolean }, acceptedRuns?: number) {
  const { db } = ctx.deps;
  const [totals, settled, outcomes, runs] = acceptedRuns !== undefined && !input.include_runs
    ? [new Map([[e.id, { queued: acceptedRuns }]]), 0, noOutcomes(e.arms), null]
    : await Promise.all([
      runTotals(db, [e.id]), settledMicros(db, e.id), armOutcomes(db, e.id, e.arms),
      input.include_runs ? experimentRuns(db, e.id, MAX_VIEW_RUNS + 1) : null,
    ]);
  if (runs && runs.length > MAX_VIEW_RUNS) {
    throw errors.validation('too_many_runs', `This study has more than ${MAX_VIEW_RUNS} runs to include at once; GET /experiments/${e.id}/runs (experiment_run_list) pages them.`, 'include_runs', { max_runs: MAX_VIEW_RUNS });
  }
  return experimentView(e, runs, totals.get(e.id), settled, compareArms(e.arms, outcomes), ctx.deps.config.baseUrl, { points: input.include_points ?? true });
}

/** Where a study's runs are read a page at a time. */
const followRuns = (experimentId: string) => ({ tool: 'experiment_run_list', description: 'Its runs, a page at a time, with each one\'s parameters and outputs.', arguments: { experiment_id: experimentId } });

const HANDLERS: Record<string, ToolDef['handler']> = {
  async experiment_prepare(input, ctx) {
    const kinds = (['arms', 'sensitivity', 'calibration', 'petab_calibration'] as const).filter((k) => input[k] !== undefined);
    if (kinds.length !== 1) {
      throw errors.validation(kinds.length ? 'study_kind_conflict' : 'study_kind_required', kinds.length
        ? `A study is one of arms, sensitivity, calibration or petab_calibration; this one asks for ${kinds.join(' and ')}.`
        : 'Say what the study is: arms to compare, a sensitivity or calibration block with its lab, or a petab_calibration of an import.', kinds[1] ?? 'arms');
    }
    if (kinds[0] === 'arms' && input.lab !== undefined) throw errors.validation('parameter_not_allowed', 'lab belongs to a sensitivity or calibration study; each arm names its own lab.', 'lab');
    if (kinds[0] === 'petab_calibration' && input.lab !== undefined) {
      throw errors.validation('parameter_not_allowed', 'A PEtab calibration runs its import\'s lab; its compute_profile_id and max_runtime_seconds go in the petab_calibration block.', 'lab');
    }
    if ((kinds[0] === 'sensitivity' || kinds[0] === 'calibration') && input.lab === undefined) throw errors.validation('parameter_requires', `A ${kinds[0]} study needs the lab it varies.`, 'lab');
    const { proposal, findings } = kinds[0] === 'arms'
      ? await prepareExperiment(ctx.deps, ctx.caller, input as Parameters<typeof prepareExperiment>[2])
      : await prepareStudy(ctx.deps, ctx.caller, input as Parameters<typeof prepareStudy>[2]);
    const plan = await createPlan(ctx.deps.db, { accountId: ctx.caller.account.id, kind: 'experiment', proposal, findings, ttlSeconds: PLAN_TTL_SECONDS });
    return {
      body: {
        object: 'experiment_plan', ...planView(plan), name: proposal.name, goal: proposal.goal,
        kind: proposal.kind ?? 'arms', design: proposal.design ?? null,
        arms: proposal.arms.map((a, i) => armView(a, findings.filter((f) => f.path?.startsWith(proposal.design ? 'lab' : `arms[${i}]`)))),
        run_count: proposal.run_count, estimated_max_usd: microsToUsd(proposal.estimated_max_micros),
      },
      next_actions: plan.status === 'ready'
        ? [{ tool: 'experiment_create', description: `After the user approves this digest and the whole-study maximum of $${microsToUsd(proposal.estimated_max_micros)} for ${proposal.run_count} runs, open the study.`, arguments: { plan_id: plan.id, plan_sha256: plan.plan_sha256 } }]
        : [],
    };
  },

  async experiment_create(input, ctx) {
    const plan = await approvedPlan(ctx.deps.db, ctx.caller.account.id, 'experiment', input.plan_id, input.plan_sha256, { resumable: true });
    const { experiment: e, acceptedNow } = await openExperiment(ctx.deps, ctx.caller, plan.id, plan.proposal as ExperimentProposal);
    return {
      body: await fullView(ctx, e, input, acceptedNow ? (plan.proposal as ExperimentProposal).run_count : undefined),
      next_actions: [{ tool: 'experiment_get', description: 'Follow the study: run totals, then the comparison.', arguments: { experiment_id: e.id } }, followRuns(e.id)],
    };
  },

  async experiment_list(input, ctx) {
    const page = await listExperiments(ctx.deps.db, ctx.caller.account.id, {
      status: input.status, workspaceId: input.workspace_id, limit: input.limit ?? ctx.deps.config.limits.pageDefault, after: decodeCursor(input.cursor, ['text', 'text']),
    });
    const totals = await runTotals(ctx.deps.db, page.rows.map((e) => e.id));
    return { body: pageBody(page, page.rows.map((e) => experimentSummary(e, totals.get(e.id), ctx.deps.config.baseUrl))) };
  },

  async experiment_get(input, ctx) {
    const e = await ownedExperiment(ctx, input.experiment_id);
    return {
      body: await fullView(ctx, e, input),
      next_actions: [followRuns(e.id)],
      warnings: [{ code: 'not_validation', message: 'The comparison is descriptive: completed runs only, no correction for multiple outputs, and no statement of scientific validity.' }],
    };
  },

  async experiment_run_list(input, ctx) {
    return listRunsOfStudy(input, ctx, await ownedExperiment(ctx, input.experiment_id));
  },

  async experiment_update(input, ctx) {
    let e = await ownedExperiment(ctx, input.experiment_id);
    if (input.cancel_running !== undefined && input.status !== 'closed') {
      throw errors.validation('parameter_requires', 'cancel_running applies only when closing the study (status: closed).', 'cancel_running');
    }
    const closing = input.status === 'closed';
    const cancelRunning = closing && input.cancel_running === true;
    // Temporal is asked first: when it cannot be reached the answer is 503 with nothing
    // changed, and a retry does it all. Then every change is one transaction.
    const cancelled = cancelRunning ? await runningExperimentRuns(ctx.deps.db, e.id) : [];
    for (const id of cancelled) await askRunToStop(ctx, { id, experiment_id: e.id });
    await ctx.deps.db.transaction(async (trx) => {
      // Runs of it may be ending elsewhere meanwhile: the balance first, in the order their endings take it.
      if (closing) await lockBalanceFirst(trx, e.account_id);
      if (input.detach_run_ids) {
        const unknown = await detachRuns(trx, e.id, input.detach_run_ids);
        if (unknown.length) throw errors.validation('run_not_in_experiment', `Not runs of this study: ${unknown.join(', ')}.`, 'detach_run_ids', { run_ids: unknown });
      }
      await describeExperiment(trx, e.id, { name: input.name, goal: input.goal });
      if (closing) await closeExperiment(trx, e.id);
    });
    // No new runs: those still waiting end now, nothing charged, a slice at a time (a
    // retry of a close cut short ends the rest). Running ones go on unless cancel_running;
    // their workflows record how they end.
    if (closing) await cancelQueuedExperimentRuns(ctx.deps.db, e.id);
    if (cancelRunning) {
      // Including a run that took its slot while the study was being closed.
      for (const id of await runningExperimentRuns(ctx.deps.db, e.id)) {
        if (!cancelled.includes(id)) await askRunToStop(ctx, { id, experiment_id: e.id });
        await markRunCancelling(ctx.deps.db, id);
      }
    }
    e = (await getExperiment(ctx.deps.db, e.id))!;
    // A study whose runs have all ended keeps its stored comparison true to its runs
    // (while runs go on, its workflow stores the comparison when the last one ends).
    if (input.detach_run_ids && e.completed_at) {
      // A comparison's CSV and chart are its arms'; a question study keeps its analysis and lists its remaining runs in design.csv.
      if (e.kind === 'arms') await storeComparisonArtifacts(ctx.deps, e, compareArms(e.arms, await armOutcomes(ctx.deps.db, e.id, e.arms)));
      else await rewriteDesignCsv(ctx.deps, e);
      e = (await getExperiment(ctx.deps.db, e.id))!;
    }
    return { body: await fullView(ctx, e, input) };
  },
};

for (const t of experimentTools) {
  const h = HANDLERS[t.name];
  if (h) t.handler = h;
}

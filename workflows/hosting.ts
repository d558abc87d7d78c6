import {
  ApplicationFailure, condition, continueAsNew, defineQuery, defineUpdate, proxyActivities, proxyLocalActivities, setHandler, workflowInfo, allHandlersFinished, ActivityFailure,
  CancellationScope, ActivityCancellationType, isCancellation, log, patched,
} from '@temporalio/workflow';
import type { HostingActivities, ChecksResult, HostingAction, HostingStatus } from '../activities/hosting.ts';
import { oneAtATime } from './serial.ts';
import { explained } from './explain.ts';
import type { InvocationActivities } from '../activities/invocations.ts';
import { computeTaskQueue, servingTaskQueue } from '../kernel/workflowNames.ts';

/** What a lifecycle carries across continue-as-new. */
export interface HostingState {
  labId: string;
  generation: number;
  profile: string;
  status: HostingStatus;
  revision: number;
  approvalRequired: boolean;
  review: Review | null;
}

export interface Review { decision: 'approve' | 'reject'; actor: string; note?: string }
export interface ActionRequest { revision: number; action: HostingAction; actor: string }
export interface Recorded { status: HostingStatus; revision: number; pending_actions: HostingAction[] }

/** PATCH /labs/{lab_id}/hosting: a lifecycle action against the revision the caller saw. */
export const hostingActionUpdate = defineUpdate<Recorded, [ActionRequest]>('hostingAction');
/** The operator's review of a public or GPU hosting. */
export const hostingReviewUpdate = defineUpdate<Recorded, [Review]>('hostingReview');
export const hostingStateQuery = defineQuery<Recorded>('hostingState');

/** Failure types a validator refuses with; the api answers them as 409 with the same code. */
export const REVISION_CONFLICT = 'revision_conflict';
export const INVALID_STATE = 'invalid_state';

const control = proxyLocalActivities<HostingActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 20 } });

/** Where each action may be taken from (retire: from anywhere the lifecycle is still going). */
const ALLOWED: Record<HostingAction, readonly HostingStatus[]> = {
  pause: ['ready'],
  resume: ['paused'],
  retire: ['requested', 'checking', 'awaiting_review', 'ready', 'paused'],
};
const AFTER: Record<HostingAction, HostingStatus> = { pause: 'paused', resume: 'ready', retire: 'retiring' };

/** What each status means for an operator reading the lifecycle in the Temporal UI. */
const STANDING: Record<HostingStatus, string> = {
  requested: 'requested; its deployment checks start next.',
  checking: 'running the deployment checks (release bytes, environment, smoke run).',
  awaiting_review: "waiting for the operator's review (public or GPU hosting).",
  ready: 'ready: a worker of the profile holds its warm instances; the standing cost is charged hourly.',
  paused: 'paused: no instances held, nothing charged.',
  retiring: 'retiring: its instances are being released.',
  retired: 'retired.',
  failed: 'failed its deployment checks.',
  rejected: "rejected by the operator's review.",
};

/** Lifecycles from this version on say whose warm instances their long serving activity holds (its summary on the UI's timeline). */
const SERVING_SUMMARY = 'hosting-serving-summary';

/** How often a ready deployment's standing cost is charged. */
const ACCRUAL_PERIOD = '1 hour';

/** Past this many history events the lifecycle continues as a new run (Temporal may also suggest it). */
const HISTORY_BOUND = 2000;

/**
 * The hosting lifecycle of one lab, workflow id `hosting-<lab_id>`, long-lived:
 * requested → checking (release bytes, environment, smoke run on the private fixtures) →
 * awaiting_review (public or GPU hosting: the operator's update) → ready ⇄ paused; any
 * → retiring → retired; failed checks → failed; a rejected review → rejected. Changes
 * arrive as updates whose validators refuse a stale revision or an action the status
 * does not allow, synchronously; each accepted change is recorded in Postgres (the read
 * model) before the caller hears back, and applied here in order.
 */
export async function hostingLifecycleWorkflow(initial: HostingState): Promise<HostingStatus> {
  const state = { ...initial };
  const queue: Array<{ action: HostingAction; actor: string }> = [];
  /** The status once every queued action is applied: what a new action is judged against. */
  const projected = () => queue.reduce<HostingStatus>((s, a) => (a.action === 'retire' ? 'retiring' : AFTER[a.action]), state.status);
  const recorded = (): Recorded => ({ status: state.status, revision: state.revision, pending_actions: queue.map((a) => a.action) });
  // An update's record and the lifecycle's own never run at once (workflows/serial.ts).
  const serial = oneAtATime();
  const record = (change: Parameters<HostingActivities['recordHosting']>[2], event: Parameters<HostingActivities['recordHosting']>[3]) =>
    serial(() => control.recordHosting(state.labId, state.generation, change, event));
  const moveTo = async (status: HostingStatus, kind: string, message: string, actor: string | null = null) => {
    state.status = status;
    tell();
    await record({ status, pending_action: queue[0]?.action ?? null }, { kind, actor, message });
  };

  // While ready, a worker of the profile holds the deployment's warm instances: an
  // activity that lasts until cancelled (pause, retire) and is retried elsewhere when its
  // worker goes away.
  let serving: { scope: CancellationScope; done: Promise<void> } | null = null;
  const serve = () => {
    if (serving) return;
    const host = proxyActivities<InvocationActivities>({
      taskQueue: servingTaskQueue(state.profile), heartbeatTimeout: '10 seconds', startToCloseTimeout: '365 days',
      retry: { initialInterval: '1 second', maximumInterval: '1 minute' }, cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    });
    const scope = new CancellationScope();
    serving = {
      scope,
      done: scope.run(() => (patched(SERVING_SUMMARY)
        ? host.serveDeployment.executeWithOptions({ summary: `warm instances of lab ${state.labId}, generation ${state.generation}, on ${servingTaskQueue(state.profile)}` }, [state.labId, state.generation])
        : host.serveDeployment(state.labId, state.generation))).catch((err: unknown) => {
        if (!isCancellation(err)) log.warn('serving the deployment ended', { labId: state.labId, error: String(err) });
      }),
    };
  };
  const unserve = async () => {
    if (!serving) return;
    serving.scope.cancel();
    await serving.done;
    serving = null;
  };
  // The owner pays for the warm instances while ready: each hour, and for the part of an
  // hour before the deployment leaves ready. A balance that cannot cover it pauses it.
  let accruedSince: number | null = null;
  const accrue = async () => {
    if (accruedSince === null) return;
    const now = Date.now();
    const seconds = (now - accruedSince) / 1000;
    accruedSince = now;
    if (seconds <= 0) return;
    const bill = await serial(() => control.accrueStandingCost(state.labId, state.generation, new Date(now).toISOString(), seconds));
    if (bill.short && state.status === 'ready' && !queue.some((a) => a.action !== 'resume')) {
      state.revision += 1;
      queue.push({ action: 'pause', actor: 'billing' });
      await record({ revision: state.revision, pending_action: 'pause' }, { kind: 'action_requested', actor: 'billing', message: 'The balance cannot cover the standing cost: pausing.' });
    }
  };
  const servedWhenReady = async () => {
    if (state.status === 'ready') {
      serve();
      accruedSince ??= Date.now();
    } else {
      accruedSince = null;
      await unserve();
    }
  };

  setHandler(hostingStateQuery, recorded);
  const tell = explained(() => ({
    object: 'hosting', lab_id: state.labId, generation: state.generation, compute_profile: state.profile, ...recorded(),
    approval: state.approvalRequired ? (state.review?.decision ?? 'awaiting') : 'not_required',
  }), (v) => {
    const pending = v.pending_actions.length ? `\n\nPending: ${v.pending_actions.join(', ')}.` : '';
    const review = v.status === 'awaiting_review' ? `\n\nReview it: \`npm run admin -- hosting approve ${v.lab_id}\` (or \`reject\`).` : '';
    return `**${v.status}** (revision ${v.revision}, generation ${v.generation}): ${STANDING[v.status]}${review}${pending}`;
  });
  setHandler(hostingActionUpdate, async ({ action, actor }) => {
    state.revision += 1;
    queue.push({ action, actor });
    tell();
    await record({ revision: state.revision, pending_action: queue[0]!.action }, { kind: 'action_requested', actor, message: `${action} requested (revision ${state.revision}).` });
    return recorded();
  }, {
    validator: ({ revision, action }: ActionRequest) => {
      if (revision !== state.revision) throw ApplicationFailure.create({ type: REVISION_CONFLICT, message: `The hosting is at revision ${state.revision}, not ${revision}; read it again.` });
      if (!ALLOWED[action].includes(projected())) throw ApplicationFailure.create({ type: INVALID_STATE, message: `Cannot ${action} a hosting that is ${projected()}.` });
    },
  });
  setHandler(hostingReviewUpdate, async (review) => {
    state.review = review;
    tell();
    const approved = review.decision === 'approve';
    await record({ approval: { required: true, reasons: [], decision: approved ? 'approved' : 'rejected', actor: review.actor, note: review.note ?? null, decided_at: new Date().toISOString() } },
      { kind: approved ? 'approved' : 'rejected', actor: review.actor, message: `Review: ${approved ? 'approved' : 'rejected'}${review.note ? ` (${review.note})` : ''}.` });
    return recorded();
  }, {
    validator: (_review: Review) => {
      if (state.status !== 'awaiting_review' || state.review) throw ApplicationFailure.create({ type: INVALID_STATE, message: `This hosting is ${state.status}; only one awaiting review can be reviewed.` });
    },
  });

  const retiring = () => queue.some((a) => a.action === 'retire');

  if (state.status === 'requested' || state.status === 'checking') {
    await moveTo('checking', 'checking', 'Deployment checks started: release bytes, environment, smoke run.');
    const checks = await runChecks(state.profile, state.labId, state.generation);
    await record({ checks: checks.checks }, { kind: 'checks_finished', message: checks.ok ? 'Every deployment check passed.' : 'A deployment check failed.' });
    if (!checks.ok) {
      queue.length = 0;
      await moveTo('failed', 'failed', `Deployment checks failed: ${checks.checks.filter((c) => c.status !== 'passed').map((c) => c.check).join(', ')}.`);
      // An update still recording its change answers before the lifecycle ends.
      await condition(allHandlersFinished);
      return state.status;
    }
    if (!retiring()) {
      if (state.approvalRequired && !state.review) await moveTo('awaiting_review', 'awaiting_review', 'Public or GPU hosting waits for an operator review.');
      else await moveTo('ready', 'ready', 'Ready for invocation.');
    }
  }
  if (state.status === 'awaiting_review') {
    await condition(() => state.review !== null || retiring());
    if (!retiring()) {
      if (state.review!.decision === 'reject') {
        await moveTo('rejected', 'rejected', `Rejected by ${state.review!.actor}.`, state.review!.actor);
        // The review's own update is still recording it: it answers before the lifecycle ends.
        await condition(allHandlersFinished);
        return state.status;
      }
      await moveTo('ready', 'ready', 'Approved; ready for invocation.', state.review!.actor);
    }
  }
  for (;;) {
    await servedWhenReady();
    const woken = await condition(() => queue.length > 0 || workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_BOUND, ACCRUAL_PERIOD);
    if (!woken) {
      await accrue();
      continue;
    }
    if (!queue.length) {
      await condition(allHandlersFinished);
      if (!queue.length) {
        // The next run serves (and bills) again: an activity belongs to the run that scheduled it.
        await accrue();
        await unserve();
        await continueAsNew<typeof hostingLifecycleWorkflow>({ ...state });
      }
      continue;
    }
    // What was used up to now is billed before the status changes.
    if (state.status === 'ready' && queue[0]!.action !== 'resume') await accrue();
    const { action, actor } = queue.shift()!;
    if (action === 'retire') {
      queue.length = 0;
      await moveTo('retiring', 'retiring', 'Retiring: no new invocations; stopping the warm instances.', actor);
      await unserve();
      await moveTo('retired', 'retired', 'Retired.', actor);
      await condition(allHandlersFinished);
      return state.status;
    }
    await moveTo(AFTER[action], action === 'pause' ? 'paused' : 'resumed', action === 'pause' ? 'Paused: invocations are refused.' : 'Resumed: ready for invocation.', actor);
  }
}

/** The deployment checks on a worker of the hosting's own profile: that a worker serves it is part of the environment. */
async function runChecks(profile: string, labId: string, generation: number): Promise<ChecksResult> {
  const compute = proxyActivities<HostingActivities>({
    taskQueue: computeTaskQueue(profile), scheduleToStartTimeout: '10 minutes', startToCloseTimeout: '15 minutes', heartbeatTimeout: '30 seconds', retry: { maximumAttempts: 3 },
  });
  try {
    return await compute.hostingChecks(labId, generation);
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    const message = cause instanceof Error ? cause.message : 'the checks could not run';
    return { ok: false, checks: [{ check: 'environment', status: 'failed', detail: `No worker of ${profile} completed the checks: ${message}`, checked_at: new Date().toISOString() }] };
  }
}

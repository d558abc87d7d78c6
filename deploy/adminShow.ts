import type { Db } from '../storage/db/knex.ts';
import { stackSetting } from './localStackSetting.ts';
import { getRun } from '../storage/db/runs.ts';
import { getExperiment, runTotals } from '../storage/db/experiments.ts';
import { buildFailures, getLock } from '../storage/db/environments.ts';
import { getHosting } from '../storage/db/hosting.ts';
import { getInvocation } from '../storage/db/hostedInvocations.ts';
import { getSession } from '../storage/db/sessions.ts';
import { getPurchase } from '../storage/db/purchases.ts';
import { isoTime } from '../storage/ids.ts';
import { microsToUsd } from '../storage/ledger.ts';
import { runView } from '../api/runs/view.ts';
import { invocationView } from '../api/invocations/view.ts';
import { purchaseView } from '../api/purchases/view.ts';
import { experimentWorkflowId, hostingWorkflowId, invocationWorkflowId, purchaseWorkflowId, runWorkflowId, sessionWorkflowId } from '../kernel/workflowNames.ts';
import { hostingView } from './adminHosting.ts';

export const SHOW_USAGE = `  runs show RUN_ID                              (each: the record, the workflow that owns it
  studies show EXPERIMENT_ID                     and its Temporal UI link; TEMPORAL_UI_URL,
  hosting show LAB_ID                            or the local stack's)
  invocations show INVOCATION_ID
  sessions show SESSION_ID
  purchases show PURCHASE_ID
  environments show LOCK_SHA256                  (a lab environment's lock: its pins, whether it is built,
                                                 the runs that failed building it)`;

/** What each `show` reads, how it prints it, and the workflow that owns it. */
const RECORDS: Record<string, { read(db: Db, id: string): Promise<Record<string, unknown> | null | undefined>; what: string }> = {
  runs: {
    what: 'run',
    async read(db, id) {
      const r = await getRun(db, id);
      if (!r) return null;
      // A study's run has no workflow of its own: its study's batches execute it.
      return {
        ...runView(r), account_id: r.account_id, environment_lock_sha256: r.runtime_sha256 ?? null,
        workflow_id: r.experiment_id ? experimentWorkflowId(r.experiment_id) : runWorkflowId(r.id),
      };
    },
  },
  studies: {
    what: 'study',
    async read(db, id) {
      const e = await getExperiment(db, id);
      return e && {
        experiment_id: e.id, account_id: e.account_id, kind: e.kind, status: e.status, arms: e.arms.map((a) => a.resolved_ref),
        // Where its runs stand: a study that stopped has the same counts each time it is read.
        runs: (await runTotals(db, [e.id])).get(e.id) ?? {},
        reserved_usd: microsToUsd(Number(e.reserved_micros)), created_at: isoTime(e.created_at), completed_at: isoTime(e.completed_at), closed_at: isoTime(e.closed_at),
        workflow_id: experimentWorkflowId(e.id),
      };
    },
  },
  hosting: {
    what: 'hosting',
    async read(db, id) {
      const h = await getHosting(db, id);
      return h && { ...hostingView(h), workflow_id: hostingWorkflowId(h.lab_id) };
    },
  },
  invocations: {
    what: 'invocation',
    async read(db, id) {
      const r = await getInvocation(db, id);
      if (!r) return r;
      // One its serving worker carried from acceptance to ending never had a workflow.
      return r.workflow_started_at
        ? { ...invocationView(r, []), account_id: r.account_id, workflow_id: invocationWorkflowId(r.id) }
        : { ...invocationView(r, []), account_id: r.account_id, workflow_id: null, carried: 'by its serving worker alone; a workflow takes it on only should that worker not carry it' };
    },
  },
  sessions: {
    what: 'session',
    async read(db, id) {
      const s = await getSession(db, id);
      // Its title and goal are the account's own words: counts and states only.
      return s && {
        session_id: s.id, account_id: s.account_id, status: s.status, version: s.version, requirements: s.contract?.requirements.length ?? 0,
        steps: s.execution_plan?.steps.map((x) => `${x.id}: ${x.status}`) ?? [], progress_entries: s.progress_count, workflow_id: sessionWorkflowId(s.id),
      };
    },
  },
  purchases: {
    what: 'purchase',
    async read(db, id) {
      const p = await getPurchase(db, undefined, id);
      return p && { ...purchaseView(p), account_id: p.account_id, workflow_id: purchaseWorkflowId(p.id) };
    },
  },
};

/** The Temporal UI's address: TEMPORAL_UI_URL, else the local stack's; null when neither says. */
function temporalUiUrl(dataDir: string): string | null {
  return stackSetting(dataDir, 'TEMPORAL_UI_URL', 'temporal_ui_url')?.replace(/\/$/, '') ?? null;
}

/**
 * `<group> show ID`: the record, the id of the workflow that owns it and that workflow's
 * page in the Temporal UI (its latest run), so an operator goes from either to the other.
 */
export async function showRecord(db: Db, dataDir: string, group: string, id: string | undefined, usage: (m: string) => Error): Promise<Record<string, unknown>> {
  const kind = RECORDS[group]!;
  if (!id) throw usage(`${group} show needs the ${kind.what}'s id`);
  const record = await kind.read(db, id);
  if (!record) throw new Error(`no ${kind.what} ${id}`);
  const ui = temporalUiUrl(dataDir);
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  return {
    ...record,
    temporal_ui: record.workflow_id === null ? null : ui ? `${ui}/namespaces/${namespace}/workflows/${encodeURIComponent(String(record.workflow_id))}` : 'set TEMPORAL_UI_URL to link the workflow',
  };
}

/**
 * `environments show LOCK_SHA256`: a lab environment's lock (its Python and pins), whether
 * a worker has built it, and the runs that ended because it could not be built, the
 * latest with the installer's own message.
 */
export async function showEnvironment(db: Db, sha256: string | undefined, usage: (m: string) => Error): Promise<Record<string, unknown>> {
  if (!sha256) throw usage('environments show needs the lock\'s sha256 (a run\'s environment_lock_sha256)');
  const lock = await getLock(db, sha256);
  if (!lock) throw new Error(`no environment lock ${sha256}`);
  const failures = await buildFailures(db, sha256);
  return {
    lock_sha256: lock.sha256, python: lock.python, distributions: lock.distributions,
    pins: lock.lock.split('\n').map((l) => /^([A-Za-z0-9][\w.-]*==[^\s\\;]+)/.exec(l)?.[1]).filter(Boolean),
    created_at: isoTime(lock.created_at), built_at: isoTime(lock.built_at), build_seconds: lock.build_seconds,
    failed_builds: failures.runs,
    latest_failure: failures.latest && { run_id: failures.latest.run_id, finished_at: isoTime(failures.latest.finished_at), message: failures.latest.message },
  };
}

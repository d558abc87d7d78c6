import { runtimeFormatFindings } from '../workspaces/formatFindings.ts';
import { parseManifestText } from '../../storage/labManifests.ts';
import { randomInt } from 'node:crypto';
import type { Deps, Caller } from '../tools/tool.ts';
import { ApiError, errors } from '../errors.ts';
import { planUnavailable } from '../plans.ts';
import { parseReference, type ReleaseRow } from '../../storage/db/releases.ts';
import type { ComputeProfileRow } from '../../storage/db/computeProfiles.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { checkInputs, contractOf, listDeclaredInputs, type Contracted } from '../../storage/inputChecks.ts';
import { resolveInputReferences } from './inputRefs.ts';
import { getRevision, getWorkspace } from '../../storage/db/workspaces.ts';
import { blobKey } from '../../storage/objects.ts';
import { unstorableProblem } from '../validation.ts';
import { getLabById } from '../../storage/db/labs.ts';
import { readLabManifests } from '../../storage/labManifests.ts';
import { planEnvironment, type EnvironmentPlan } from './environment.ts';
import { getLock } from '../../storage/db/environments.ts';
import { findReusableRun } from '../../storage/db/runs.ts';
import { runCapFindings } from '../spendCaps.ts';
import { digestJson } from '../../storage/digest.ts';

/** The approved content of a run: what a plan digests and what POST /runs executes. */
export interface RunProposal {
  [k: string]: unknown;
  kind: 'hub' | 'managed';
  ref: string;
  resolved_ref: string;
  release_id: string | null;
  workspace_id?: string;
  revision_id?: string;
  package_sha256: string;
  inputs: Record<string, unknown>;
  compute_profile: string;
  max_runtime_seconds: number;
  estimated_max_micros: number;
  seed: number;
  /** With package, seed and profile: what makes two runs the same computation (lone runs record them; a study's do not). */
  inputs_sha256?: string;
  /** The environment lock's digest: the default runtime's, or the lab's own (./environment.ts). */
  runtime_sha256?: string;
  /** The environment it runs in, as the plan shows it (its status is advisory: a worker builds it when needed). */
  environment?: EnvironmentPlan;
  /**
   * The day the plan asked its environment resolved as of (null: none, so a lab with exact
   * pins is dated by them). Absent from plans made before pins dated a lab, whose
   * `resolved_as_of` was always the day asked.
   */
  environment_as_of?: string | null;
  /** The completed run this one is answered from, at no cost (asked for with `reuse: true`). */
  reuse_of?: string;
  /** The accounts whose runs may answer it: the caller's, and a public release's owner who allows reuse. */
  reuse_accounts?: string[];
  /** A spend cap below the run's maximum price: it reserves this much and stops when it has cost it. */
  cap_micros?: number;
}

/** `<ns>/<name>@<version>` (version optional: the latest accessible one). */
export async function resolveRelease(deps: Deps, caller: Caller, ref: string, param: string): Promise<ReleaseRow> {
  const r = parseReference(ref, false);
  if (!r) throw errors.validation('parameter_invalid_format', `${param} must look like <namespace>/<name>@<version>.`, param);
  const release = await deps.releases(caller.account.id, r);
  if (!release) throw errors.notFound('capability_not_found', 'capability', param);
  return release as ReleaseRow;
}


async function profileOf(deps: Deps, id: string, param: string): Promise<ComputeProfileRow> {
  const p = await deps.profiles(id);
  if (!p) throw errors.validation('compute_profile_not_found', `No compute profile ${id}; see GET /v1/compute-profiles.`, param);
  return p;
}

/** A run's runtime bound on its profile. */
function checkRuntimeBound(profile: ComputeProfileRow, maxRuntime: number): void {
  if (maxRuntime > profile.max_runtime_seconds) {
    throw errors.validation('parameter_out_of_range', `max_runtime_seconds must be at most ${profile.max_runtime_seconds} on ${profile.id}.`, 'max_runtime_seconds');
  }
}

/** What a run executes: a release, or a workspace revision seen the same way. */
export type Runnable = Pick<ReleaseRow, 'id' | 'namespace' | 'name' | 'version' | 'inputs' | 'manifest' | 'package_sha256' | 'runtime_problems' | 'tree' | 'environment_lock_sha256'>;

/**
 * The environment a run executes in and what it finds, from the source files it runs, for
 * releases and revisions alike (./environment.ts). A release recorded without its source
 * tree keeps the problems found when it was packed, and runs in the default runtime.
 */
async function runtimeFindings(deps: Deps, runnable: Runnable, asOf?: string): Promise<{ environment: EnvironmentPlan | null; findings: Finding[] }> {
  if (!runnable.tree?.['lab.yaml']) {
    const problems = runnable.runtime_problems ?? [];
    return {
      environment: problems.length ? null : { lock_sha256: deps.runtimeLock.sha256, python: deps.runtimeLock.python, status: 'ready' },
      findings: problems.map((problem) => ({ severity: 'blocking', code: 'runtime_unsatisfiable', message: `This lab cannot run in the platform runtime: ${problem}.`, path: 'capability_ref' })),
    };
  }
  // A release runs in the environment it was published with, unless the plan names a date.
  const recorded = !asOf && runnable.environment_lock_sha256 ? await getLock(deps.db, runnable.environment_lock_sha256) : undefined;
  return planEnvironment(deps, await readLabManifests(deps.objects, runnable.tree, runnable.manifest), asOf, recorded);
}

/**
 * A private workspace revision as a runnable: its lab.yaml's contract, named
 * `<namespace>/<lab>@rev-<n>`, identified by its tree digest.
 */
async function resolveRevision(deps: Deps, caller: Caller, w: { workspaceId: string; revisionId: string }): Promise<Runnable> {
  const ws = await getWorkspace(deps.db, w.workspaceId, caller.account.id);
  if (!ws) throw errors.notFound('workspace_not_found', 'workspace', 'workspace_id');
  const rev = await getRevision(deps.db, ws.id, w.revisionId);
  if (!rev) throw errors.notFound('revision_not_found', 'revision', 'revision_id');
  const lab = (await getLabById(deps.db, ws.lab_id))!;
  const file = rev.tree['lab.yaml'];
  if (!file) throw errors.validation('manifest_missing', 'This revision has no lab.yaml to run.', 'revision_id');
  // Read outside the parse: a store that cannot answer is a 503, not a lab.yaml problem.
  const text = (await deps.objects.getBytes(blobKey(file.sha256))).toString('utf8');
  let manifest: Record<string, unknown>;
  try {
    manifest = parseManifestText(text);
  } catch (err) {
    throw errors.validation('manifest_invalid', `lab.yaml does not parse: ${(err as Error).message.split('\n')[0]}`, 'revision_id');
  }
  const bad = unstorableProblem(manifest);
  if (bad) throw errors.validation('manifest_invalid', `lab.yaml ${bad}.`, 'revision_id');
  return {
    id: rev.id, namespace: caller.account.namespace, name: lab.name, version: `rev-${rev.number}`,
    inputs: contractOf(manifest as never).inputs, manifest, package_sha256: rev.tree_sha256, runtime_problems: [], tree: rev.tree, environment_lock_sha256: null,
  };
}

/**
 * The 422 for inputs a lab does not declare (runs, invocations, studies): `said` names
 * them; the message goes on with the inputs it declares, and the details list both.
 */
export function unknownInputsError(release: Contracted, unknown: string[], said: string, param: string): ApiError {
  const { declared, sentence } = listDeclaredInputs(release);
  return errors.validation('unknown_inputs', `${said} ${sentence}`, param, { unknown, declared });
}

/**
 * Everything a run plan checks, shared by POST /run-plans and the direct form of POST
 * /runs: the capability, the inputs against its contract (unknown names are a 422
 * `unknown_inputs`), the profile and its runtime bound, and the price. Nothing is
 * reserved and nothing runs.
 */
export async function prepareRun(
  deps: Deps, caller: Caller,
  req: {
    ref?: string; refParam: string; workspace?: { workspaceId: string; revisionId: string };
    inputs: Record<string, unknown>; profileId?: string; profileParam: string; maxRuntimeSeconds?: number; seed?: number;
    /**
     * Answer from an identical completed run when there is one; `skip`: do not look for
     * one (a recheck: the acceptance itself checks that a reused run's source is there).
     */
    reuse?: boolean | 'skip';
    /** Apply the account's and the key's spend caps (lone runs; a study is priced as a whole). */
    caps?: boolean;
    /** Resolve a lab's own environment as the package index stood at the end of this day (UTC). */
    environmentAsOf?: string;
  },
): Promise<{ proposal: RunProposal; findings: Finding[]; release: Runnable; profile: ComputeProfileRow }> {
  const release = req.workspace ? await resolveRevision(deps, caller, req.workspace) : await resolveRelease(deps, caller, req.ref!, req.refParam);
  const profile = await profileOf(deps, req.profileId ?? 'cpu-small', req.profileParam);
  const maxRuntime = req.maxRuntimeSeconds ?? profile.max_runtime_seconds;
  checkRuntimeBound(profile, maxRuntime);
  const { unknown, findings } = checkInputs(release, req.inputs);
  const runtime = await runtimeFindings(deps, release, req.environmentAsOf);
  findings.push(...runtime.findings);
  // A release was judged by the runtime when it was packed; a revision is judged here.
  if (req.workspace) findings.push(...await runtimeFormatFindings(deps, release.tree!, 'blocking'));
  if (unknown.length) {
    throw unknownInputsError(release, unknown, `Inputs not declared by ${release.namespace}/${release.name}@${release.version}: ${unknown.join(', ')}.`, 'inputs');
  }
  findings.push(...await resolveInputReferences(deps, caller, release.manifest, req.inputs));
  try {
    if (!(await deps.temporal.hasComputeWorker(profile.id))) {
      findings.push({ severity: 'warning', code: 'capacity_unavailable', message: `No worker serves ${profile.id} right now; the run waits and fails with capacity_unavailable after ${profile.schedule_to_start_seconds}s if none comes.`, path: 'compute_profile_id' });
    }
  } catch {
    // availability is advisory
  }
  const resolved = `${release.namespace}/${release.name}@${release.version}`;
  const proposal: RunProposal = {
    kind: req.workspace ? 'managed' : 'hub', ref: req.ref ?? resolved, resolved_ref: resolved,
    release_id: req.workspace ? null : release.id, ...(req.workspace ? { workspace_id: req.workspace.workspaceId, revision_id: req.workspace.revisionId } : {}),
    package_sha256: `sha256:${release.package_sha256}`,
    inputs: req.inputs, compute_profile: profile.id, max_runtime_seconds: maxRuntime,
    estimated_max_micros: maxRuntime * profile.price_per_second_micros, seed: req.seed ?? randomInt(0, 2 ** 31 - 1),
    inputs_sha256: digestJson(req.inputs), runtime_sha256: runtime.environment?.lock_sha256 ?? deps.runtimeLock.sha256,
    ...(runtime.environment ? { environment: runtime.environment } : {}), environment_as_of: req.environmentAsOf ?? null,
  };
  if (req.reuse !== 'skip') findings.push(...await reuseFindings(deps, caller, proposal, { seed: req.seed, reuse: req.reuse }));
  if (req.caps && !proposal.reuse_of) {
    const capped = await runCapFindings(deps, caller, proposal.estimated_max_micros, profile);
    findings.push(...capped.findings);
    if (capped.capMicros !== undefined) proposal.cap_micros = proposal.estimated_max_micros = capped.capMicros;
  }
  return { release, profile, findings, proposal };
}

/**
 * Reuse: with `reuse: true`, the newest identical completed run answers this one (its seed
 * adopted when none was asked for; price zero); without it, an identical run is pointed
 * out. Only when nothing blocks the run.
 */
async function reuseFindings(deps: Deps, caller: Caller, proposal: RunProposal, req: { seed?: number; reuse?: boolean }): Promise<Finding[]> {
  const { owner, source } = await findReusableRun(deps.db, caller.account.id, proposal.release_id, {
    package_sha256: proposal.package_sha256, inputs_sha256: proposal.inputs_sha256!, compute_profile: proposal.compute_profile, runtime_sha256: proposal.runtime_sha256!, seed: req.seed,
  });
  const accounts = owner ? [caller.account.id, owner] : [caller.account.id];
  if (!req.reuse) {
    return source ? [{ severity: 'info', code: 'identical_run_exists', message: `${source.account_id === caller.account.id ? `Run ${source.id}` : 'A run of this release\'s owner, who allows reuse,'} already computed exactly this${req.seed === undefined ? ` (with seed ${source.seed})` : ''}: send reuse: true to answer from it at no cost.`, path: 'reuse' }] : [];
  }
  if (!source) return [{ severity: 'info', code: 'no_identical_run', message: 'No completed run of this account is the same computation (package, inputs, seed, compute profile, runtime): this run executes and is charged as usual.', path: 'reuse' }];
  proposal.reuse_of = source.id;
  proposal.reuse_accounts = accounts;
  proposal.seed = source.seed;
  proposal.estimated_max_micros = 0;
  const whose = source.account_id === caller.account.id ? '' : ' of the release\'s owner (who allows reuse)';
  return [{ severity: 'info', code: 'reused', message: `Answered from run ${source.id}${whose} (finished ${source.finished_at?.toISOString()}): the same package, inputs, seed ${source.seed}, compute profile and runtime. Nothing runs; the price is $0.`, path: 'reuse' }];
}

/**
 * Execution rechecks what can have changed since a proposal was approved: the release or
 * revision must still be visible with the same bytes, its file and dataset inputs still
 * the caller's and usable, its runtime bound within the profile, and a lone run's spend
 * caps must still allow its price (`caps: false` for a study's arm: the study checks its
 * caps whole); otherwise the plan is unavailable (409) and must be prepared again. What
 * the bytes decide (the contract the inputs were checked against) is not worked out
 * again. The environment is, unless the plan runs in the platform's runtime as it still
 * is: a lab of its own environment has its lock resolved again (the resolver may answer
 * differently now), and one in a runtime the platform moved from is refused.
 * Returns the compute profile as it is now.
 */
export async function recheckProposal(deps: Deps, caller: Caller, proposal: RunProposal, opts: { caps?: boolean } = {}): Promise<ComputeProfileRow> {
  const caps = (opts.caps ?? true) && !proposal.reuse_of;
  const changed = () => planUnavailable('The capability or its contract changed since this plan was prepared; prepare it again.', null);
  const runnable = proposal.kind === 'managed'
    ? await resolveRevision(deps, caller, { workspaceId: proposal.workspace_id!, revisionId: proposal.revision_id! })
    : await resolveRelease(deps, caller, proposal.resolved_ref, 'plan_id');
  if (runnable.package_sha256 !== proposal.package_sha256.replace('sha256:', '')) throw changed();
  const profile = await profileOf(deps, proposal.compute_profile, 'plan_id');
  checkRuntimeBound(profile, proposal.max_runtime_seconds);
  if (proposal.runtime_sha256 !== undefined && proposal.runtime_sha256 !== deps.runtimeLock.sha256) {
    const asked = proposal.environment_as_of === undefined ? proposal.environment?.resolved_as_of : proposal.environment_as_of ?? undefined;
    const runtime = await runtimeFindings(deps, runnable, asked);
    if ((runtime.environment?.lock_sha256 ?? deps.runtimeLock.sha256) !== proposal.runtime_sha256 || runtime.findings.some((f) => f.severity === 'blocking')) throw changed();
  }
  if ((await resolveInputReferences(deps, caller, runnable.manifest, proposal.inputs)).some((f) => f.severity === 'blocking')) throw changed();
  if (caps) {
    const uncapped = proposal.max_runtime_seconds * profile.price_per_second_micros;
    const capped = await runCapFindings(deps, caller, uncapped, profile);
    const lowered = (capped.capMicros ?? uncapped) < proposal.estimated_max_micros;
    const capFinding = capped.findings.find((f) => f.code === 'spend_cap_reached' || (lowered && f.code === 'spend_cap_applies'));
    if (capFinding || lowered) {
      throw planUnavailable(`A spend cap changed since this plan was prepared${capFinding ? `: ${capFinding.message}` : ''}; prepare it again.`, null);
    }
  }
  return profile;
}

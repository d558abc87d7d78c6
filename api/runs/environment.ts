import { errors } from '../errors.ts';
import type { Deps } from '../tools/tool.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { readRuntimeLock, runtimePinFindings, TOOLKIT_LOCK_FILE, TOOLKIT_PINS, type LabManifests } from '../../storage/runtimePins.ts';
import { declaredRuntime } from './declaredRuntime.ts';
import { lockAsOf, lockBasis, resolveLock } from './resolveLock.ts';
import { datePins, exactPins, PIN_GRACE_DAYS } from './pinsAsOf.ts';
import { buildSecondsPerDistribution, recordLock, resolvedLock, type EnvironmentLockRow } from '../../storage/db/environments.ts';
import { digestJson } from '../../storage/digest.ts';

/**
 * The environment a plan names: its lock's digest, its Python, whether it is built yet,
 * and when not, about how long its build takes (from this deployment's timed builds per
 * distribution; never billed to the run).
 */
export interface EnvironmentPlan {
  lock_sha256: string; python: string; status: 'ready' | 'build_required'; estimated_build_seconds?: number;
  /** The day (UTC) the lab's own environment was resolved as of, when it was. */
  resolved_as_of?: string;
}

/**
 * A requested `environment_as_of` day, refused (422) when it is after today (UTC): the
 * index of a day that has not ended is not yet what it will be.
 */
export function pastDay(day: string | undefined, param: string): string | undefined {
  if (day === undefined) return undefined;
  if (day > new Date().toISOString().slice(0, 10)) throw errors.validation('parameter_out_of_range', `${param} must be a day that has begun (UTC): ${day} is after today.`, param);
  return day;
}

/** Seconds a build takes per distribution before any build here was timed. */
const DEFAULT_SECONDS_PER_DISTRIBUTION = 0.5;

/** What the default runtime cannot give a lab, which its own environment can. */
const NEEDS_OWN = new Set(['runtime_unsatisfiable', 'runtime_version_differs']);

/** uv's words when a resolution has no solution (not an index or a network that failed). */
const NO_SOLUTION = /^No solution found when resolving dependencies/;

/** What a pin finding says the lab declares (its message's subject: `runtime.python_version "3.12"`, `tellurium==2.2.11.2`). */
const declaredIn = (f: Finding) => f.message.split(/ is (?:required|pinned|not installed)/)[0]!;

/** The version of a distribution a lock pins, if it does. */
const lockedVersion = (lock: string, name: string) => new RegExp(`^${name}==(\\S+)`, 'mi').exec(lock)?.[1];

const TOOLKIT = readRuntimeLock(TOOLKIT_LOCK_FILE);

/**
 * Where a lab asks for the PEtab toolkit (a runtime the deployment provides) by declaring
 * every one of its pins, and the toolkit satisfies all it declares, the finding that says
 * it runs there. Asked for, not merely satisfied: a lab that declares tellurium alone gets
 * an environment of exactly what it declares, not one with pyPESTO and more beside it.
 */
function toolkitFor(lab: LabManifests, declared: string[]): Finding | null {
  const asked = new Set(declared.map((r) => r.replace(/\s+/g, '').toLowerCase()));
  if (!TOOLKIT_PINS.every((p) => asked.has(p.toLowerCase()))) return null;
  const pins = runtimePinFindings(TOOLKIT, lab);
  if (pins.some((f) => NEEDS_OWN.has(f.code) || f.severity === 'blocking')) return null;
  return {
    severity: 'info', code: 'environment_toolkit',
    message: `The lab declares the PEtab toolkit's runtime (Python ${TOOLKIT.python}, petab ${TOOLKIT.packages.get('petab')}, pyPESTO ${TOOLKIT.packages.get('pypesto')}, tellurium ${TOOLKIT.packages.get('tellurium')}), which this deployment provides built (lock sha256:${TOOLKIT.sha256}); the lab runs in it without network.`,
    path: 'lab.yaml',
  };
}

/**
 * The environment a lab runs in, at plan time. A lab whose declared runtime (its Python
 * version, its pins and ranges) the default runtime satisfies runs in it; one the PEtab
 * toolkit satisfies, where the deployment provides it, runs in that; any other gets
 * its own, resolved here by uv against the package index into a lock with hashes (once
 * per declaration: later plans read the recorded lock), and built by a worker before its
 * first run. A Python this deployment does not provide, or requirements the index cannot
 * satisfy, block the plan with the resolver's own words. A release passes the lock it was
 * published with (`recorded`), which it keeps whatever a resolution would give now.
 */
export async function planEnvironment(deps: Deps, lab: LabManifests, asOf?: string, recorded?: EnvironmentLockRow): Promise<{ environment: EnvironmentPlan | null; findings: Finding[] }> {
  const pins = runtimePinFindings(deps.runtimeLock, lab);
  const own = pins.filter((f) => NEEDS_OWN.has(f.code) && !/names a URL/.test(f.message));
  const others = pins.filter((f) => !own.includes(f));
  if (!own.length) {
    const unused: Finding[] = asOf ? [{ severity: 'info', code: 'environment_as_of_unused', message: `The lab runs in the default runtime, which is not resolved again: environment_as_of ${asOf} applies only to a lab that gets its own environment.`, path: 'environment_as_of' }] : [];
    return { environment: { lock_sha256: deps.runtimeLock.sha256, python: deps.runtimeLock.python, status: 'ready' }, findings: [...pins, ...unused] };
  }
  if (others.some((f) => f.severity === 'blocking')) return { environment: null, findings: others };
  const settings = deps.config.environments;
  const declared = declaredRuntime(lab, deps.runtimeLock);
  if (declared.findings.some((f) => f.severity === 'blocking')) return { environment: null, findings: [...others, ...declared.findings] };
  const toolkit = settings.toolkitPython && !asOf ? toolkitFor(lab, declared.requirements) : null;
  if (toolkit) return { environment: { lock_sha256: TOOLKIT.sha256, python: TOOLKIT.python, status: 'ready' }, findings: [...others, toolkit] };
  const provided = Object.keys(settings.pythons).sort();
  if (!settings.pythons[declared.python]) {
    const at = own.find((f) => f.path?.endsWith('/runtime/python_version'))?.path ?? 'lab.yaml#/runtime/python_version';
    return { environment: null, findings: [...others, { severity: 'blocking', code: 'python_unavailable', message: `Python ${declared.python} is not provided here; this deployment provides ${provided.length ? provided.join(', ') : 'no other Python'}. Declare one of them.`, path: at }] };
  }
  // A resolution as of a date is another request, and so is one dated by the lab's exact
  // pins (the index is asked their upload times once per declaration); one of ranges alone
  // keeps the digest it always had.
  const exact = asOf ? [] : exactPins(declared.requirements, declared.added);
  const dating = asOf ? { as_of: asOf } : exact.length ? { as_of: `pins+${PIN_GRACE_DAYS}d` } : {};
  const request = digestJson({ python: declared.python, requirements: declared.requirements, index: settings.indexUrl, ...dating });
  let lock = recorded ?? await resolvedLock(deps.db, request);
  if (!lock) {
    const dated = exact.length ? await datePins(settings.indexUrl, exact) : undefined;
    const unsatisfiable = (why: string): { environment: null; findings: Finding[] } => ({ environment: null, findings: [...others, { severity: 'blocking', code: 'dependencies_unsatisfiable', message: `The declared requirements (${declared.requirements.join(', ')}) cannot be resolved for Python ${declared.python} from ${settings.indexUrl}${asOf ? ` as of ${asOf}` : ''}: ${why}`, path: own[0]!.path }] });
    // Not knowing when the pins were uploaded is no reason to resolve as today for good.
    if (dated && 'unreachable' in dated) return unsatisfiable(`${dated.undated}; plan again, or name environment_as_of`);
    const day = asOf ?? (dated && 'day' in dated ? dated.day : undefined);
    const basis = !dated ? undefined : 'day' in dated
      ? `${PIN_GRACE_DAYS} days after its newest exact pin, ${dated.pin}, was uploaded (${dated.uploaded})`
      : `not dated by its exact pins, since ${dated.undated}`;
    const wanted = { python: declared.python, requirements: declared.requirements, exempt: declared.added };
    let resolved = await resolveLock(settings, { ...wanted, asOf: day, ...(basis ? { basis } : {}) });
    // The pins' day is our guess at the author's, not their word: where what the service
    // adds (its biosimulant and what that needs) did not exist yet, the lab resolves as today.
    if ('error' in resolved && dated && 'day' in dated && NO_SOLUTION.test(resolved.error)) {
      const cause = /cause: (.*)/.exec(resolved.error)?.[1] ?? resolved.error.split('\n')[0];
      resolved = await resolveLock(settings, { ...wanted, basis: `not dated by its exact pins, since as of ${dated.day} (${basis}) its requirements cannot be resolved: ${cause}` });
    }
    if ('error' in resolved) return unsatisfiable(resolved.error);
    await recordLock(deps.db, request, resolved.lock);
    lock = { sha256: resolved.lock.sha256, python: declared.python, lock: resolved.lock.text, distributions: resolved.lock.distributions, built_at: null, build_seconds: null, created_at: new Date() };
  }
  const count = lock.distributions;
  const dated = lockAsOf(lock.lock);
  const basis = lockBasis(lock.lock);
  const environment: EnvironmentPlan = lock.built_at
    ? { lock_sha256: lock.sha256, python: lock.python, status: 'ready' }
    : { lock_sha256: lock.sha256, python: lock.python, status: 'build_required', estimated_build_seconds: Math.ceil(count * ((await buildSecondsPerDistribution(deps.db)) ?? DEFAULT_SECONDS_PER_DISTRIBUTION)) };
  if (dated) environment.resolved_as_of = dated;
  // Each model may declare the same thing: each is said once.
  const reasons = [...new Set(own.map(declaredIn))];
  const runsWith = lockedVersion(lock.lock, 'biosimulant');
  return {
    environment,
    findings: [...others, {
      severity: 'info', code: 'environment_own',
      message: `The default runtime (Python ${deps.runtimeLock.python}, biosimulant ${deps.runtimeLock.packages.get('biosimulant')}) does not give this lab what it declares (${reasons.join('; ')}), so it runs in its own environment: Python ${lock.python}${runsWith ? ` with biosimulant ${runsWith}` : ''}, ${count} distributions locked with their hashes (lock sha256:${lock.sha256})${dated ? `, resolved as the package index stood at the end of ${dated} (UTC)${basis ? `, ${basis}; environment_as_of names another day` : ''}` : basis ? `, resolved as the package index stood when first planned, ${basis}; environment_as_of names a day` : ''}, ${environment.status === 'ready' ? 'already built' : `built before its first run (about ${environment.estimated_build_seconds} s), not billed to the run`}; the lab runs in it without network.`,
      path: own[0]!.path,
    }],
  };
}

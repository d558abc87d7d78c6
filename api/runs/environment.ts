import type { Deps } from '../tools/tool.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { runtimePinFindings, type LabManifests } from '../../storage/runtimePins.ts';
import { declaredRuntime } from './declaredRuntime.ts';
import { resolveLock } from './resolveLock.ts';
import { buildSecondsPerDistribution, recordLock, resolvedLock } from '../../storage/db/environments.ts';
import { digestJson } from '../../storage/digest.ts';

/**
 * The environment a plan names: its lock's digest, its Python, whether it is built yet,
 * and when not, about how long its build takes (from this deployment's timed builds per
 * distribution; never billed to the run).
 */
export interface EnvironmentPlan { lock_sha256: string; python: string; status: 'ready' | 'build_required'; estimated_build_seconds?: number }

/** Seconds a build takes per distribution before any build here was timed. */
const DEFAULT_SECONDS_PER_DISTRIBUTION = 0.5;

/** What the default runtime cannot give a lab, which its own environment can. */
const NEEDS_OWN = new Set(['runtime_unsatisfiable', 'runtime_version_differs']);

/**
 * The environment a lab runs in, at plan time. A lab whose declared runtime (its Python
 * version, its pins and ranges) the default runtime satisfies runs in it; any other gets
 * its own, resolved here by uv against the package index into a lock with hashes (once
 * per declaration: later plans read the recorded lock), and built by a worker before its
 * first run. A Python this deployment does not provide, or requirements the index cannot
 * satisfy, block the plan with the resolver's own words.
 */
export async function planEnvironment(deps: Deps, lab: LabManifests): Promise<{ environment: EnvironmentPlan | null; findings: Finding[] }> {
  const pins = runtimePinFindings(deps.runtimeLock, lab);
  const own = pins.filter((f) => NEEDS_OWN.has(f.code) && !/names a URL/.test(f.message));
  const others = pins.filter((f) => !own.includes(f));
  if (!own.length) return { environment: { lock_sha256: deps.runtimeLock.sha256, python: deps.runtimeLock.python, status: 'ready' }, findings: pins };
  if (others.some((f) => f.severity === 'blocking')) return { environment: null, findings: others };
  const settings = deps.config.environments;
  const declared = declaredRuntime(lab, deps.runtimeLock);
  if (declared.findings.some((f) => f.severity === 'blocking')) return { environment: null, findings: [...others, ...declared.findings] };
  const provided = Object.keys(settings.pythons).sort();
  if (!settings.pythons[declared.python]) {
    const at = own.find((f) => f.path?.endsWith('/runtime/python_version'))?.path ?? 'lab.yaml#/runtime/python_version';
    return { environment: null, findings: [...others, { severity: 'blocking', code: 'python_unavailable', message: `Python ${declared.python} is not provided here; this deployment provides ${provided.length ? provided.join(', ') : 'no other Python'}. Declare one of them.`, path: at }] };
  }
  const request = digestJson({ python: declared.python, requirements: declared.requirements, index: settings.indexUrl });
  let lock = await resolvedLock(deps.db, request);
  if (!lock) {
    const resolved = await resolveLock(settings, declared.python, declared.requirements);
    if ('error' in resolved) {
      return { environment: null, findings: [...others, { severity: 'blocking', code: 'dependencies_unsatisfiable', message: `The declared requirements (${declared.requirements.join(', ')}) cannot be resolved for Python ${declared.python} from ${settings.indexUrl}: ${resolved.error}`, path: own[0]!.path }] };
    }
    await recordLock(deps.db, request, resolved.lock);
    lock = { sha256: resolved.lock.sha256, python: declared.python, lock: resolved.lock.text, distributions: resolved.lock.distributions, built_at: null, build_seconds: null, created_at: new Date() };
  }
  const count = lock.distributions;
  const environment: EnvironmentPlan = lock.built_at
    ? { lock_sha256: lock.sha256, python: lock.python, status: 'ready' }
    : { lock_sha256: lock.sha256, python: lock.python, status: 'build_required', estimated_build_seconds: Math.ceil(count * ((await buildSecondsPerDistribution(deps.db)) ?? DEFAULT_SECONDS_PER_DISTRIBUTION)) };
  return {
    environment,
    findings: [...others, {
      severity: 'info', code: 'environment_own',
      message: `The default runtime (Python ${deps.runtimeLock.python}) does not give this lab what it declares (${own.map((f) => f.message.replace(/\.$/, '')).join('; ')}), so it runs in its own environment: Python ${lock.python}, ${count} distributions locked with their hashes (lock sha256:${lock.sha256}), ${environment.status === 'ready' ? 'already built' : `built before its first run (about ${environment.estimated_build_seconds} s), not billed to the run`}; the lab runs in it without network.`,
      path: own[0]!.path,
    }],
  };
}

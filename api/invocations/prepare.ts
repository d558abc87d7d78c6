import { randomInt } from 'node:crypto';
import type { Deps, Caller } from '../tools/tool.ts';
import { checkInputs } from '../../storage/inputChecks.ts';
import { resolveInputReferences } from '../runs/inputRefs.ts';
import { unknownInputsError } from '../runs/prepare.ts';
import { visibleHostedRelease } from '../hosting/release.ts';
import type { ComputeProfileRow } from '../../storage/db/computeProfiles.ts';
import type { HostingRow } from '../../storage/db/hosting.ts';
import type { NewInvocation } from '../../storage/db/hostedInvocations.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { digestJson } from '../../storage/digest.ts';
import { invocationCapFindings } from '../spendCaps.ts';

/** The longest an invocation may run, whatever its profile allows: hosting is for short calls. */
export const INVOCATION_MAX_SECONDS = 300;

/**
 * The approved content of one invocation: what its plan digests and POST
 * /hosted-invocations executes. It binds the OAuth client (the key's client id) that
 * planned it, and only that client may execute it (rule 12).
 */
export type InvocationProposal = Pick<NewInvocation,
  'account_id' | 'client_id' | 'lab_id' | 'hosting_generation' | 'reference' | 'package_sha256' | 'inputs' | 'inputs_sha256' | 'seed' | 'compute_profile' | 'max_seconds'
> & { estimated_max_micros: number; cap_micros?: number; [k: string]: unknown };

export interface InvocationRequest { reference: string; sha256: string; inputs?: Record<string, unknown>; seed?: number }

/** Why a hosting in this status takes no invocation, or null when it is ready. */
export function deploymentFinding(h: HostingRow): Finding | null {
  if (h.status === 'ready') return null;
  return h.status === 'paused'
    ? { severity: 'blocking', code: 'deployment_paused', message: `The deployment of ${h.reference} is paused; its owner resumes it.`, path: 'reference' }
    : { severity: 'blocking', code: 'deployment_unavailable', message: `The deployment of ${h.reference} is ${h.status}, not ready for invocations.`, path: 'reference' };
}

/**
 * Everything an invocation plan checks: the hosted release is visible to the caller with
 * this digest (as GET /hosted-releases), its deployment is ready, the inputs satisfy its
 * contract as a run's would (unknown names are a 422 `unknown_inputs`; a file or dataset
 * is the invoker's own, by id, 404 like a missing one otherwise); and what it binds:
 * the account and OAuth client, the deployment (lab and generation), the inputs' identity,
 * the seed, the compute bounds and the most it can cost (within the spend caps). Nothing runs.
 */
export async function prepareInvocation(deps: Deps, caller: Caller, req: InvocationRequest): Promise<{
  proposal: InvocationProposal; findings: Finding[]; hosting: HostingRow; profile: ComputeProfileRow;
}> {
  const { release, hosting } = await visibleHostedRelease(deps, caller, req.reference, req.sha256, { ended: true });
  const inputs = req.inputs ?? {};
  const { unknown, findings } = checkInputs(release, inputs);
  if (unknown.length) {
    throw unknownInputsError(release, unknown, `Inputs not declared by ${hosting.reference}: ${unknown.join(', ')}.`, 'inputs');
  }
  // A `file` or `dataset` input names the invoker's own (file_id, dataset id), as a run's does.
  findings.push(...await resolveInputReferences(deps, caller, release.manifest, inputs));
  const unavailable = deploymentFinding(hosting);
  if (unavailable) findings.unshift(unavailable);
  const profile = (await deps.profiles(hosting.compute_profile))!;
  const capped = await invocationCapFindings(deps, caller, Math.min(INVOCATION_MAX_SECONDS, profile.max_runtime_seconds), profile);
  findings.push(...capped.findings);
  const maxSeconds = capped.maxSeconds;
  return {
    hosting, profile, findings,
    proposal: {
      account_id: caller.account.id, client_id: caller.key.client_id, lab_id: hosting.lab_id, hosting_generation: hosting.generation,
      reference: hosting.reference, package_sha256: hosting.package_sha256, inputs, inputs_sha256: digestJson(inputs),
      seed: req.seed ?? randomInt(0, 2 ** 31 - 1), compute_profile: profile.id, max_seconds: maxSeconds,
      estimated_max_micros: maxSeconds * Number(profile.price_per_second_micros),
      ...(capped.capMicros !== undefined ? { cap_micros: capped.capMicros } : {}),
    },
  };
}

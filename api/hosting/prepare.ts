import type { Deps, Caller } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { planUnavailable } from '../plans.ts';
import { getLab, type LabRow } from '../../storage/db/labs.ts';
import { findVisibleRelease, parseReference, type ReleaseRow } from '../../storage/db/releases.ts';
import type { ComputeProfileRow } from '../../storage/db/computeProfiles.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { digestJson } from '../../storage/digest.ts';
import { smokeInputsOf } from '../../storage/labContract.ts';

/** The approved content of a hosting request: what its plan digests and POST /hosting-requests executes. */
export interface HostingProposal {
  [k: string]: unknown;
  lab_id: string;
  release_id: string;
  reference: string;
  package_sha256: string;
  compute_profile: string;
  min_instances: number;
  max_instances: number;
  visibility: 'private' | 'team' | 'public';
  /** Identity of the private smoke fixtures the checks will run. */
  smoke_inputs_sha256: string;
  approval_required: boolean;
  approval_reasons: string[];
  /** What `min_instances` warm instances cost per hour while ready, in micro-dollars. */
  hourly_micros: number;
}

export interface HostingRequest {
  release: { reference: string; sha256: string };
  compute_profile_id?: string;
  min_instances?: number;
  max_instances?: number;
  visibility?: 'private' | 'team' | 'public';
}

export async function ownedLab(deps: Deps, caller: Caller, labId: string): Promise<LabRow> {
  const lab = await getLab(deps.db, labId, caller.account.id);
  if (!lab) throw errors.notFound('lab_not_found', 'lab', 'lab_id');
  return lab;
}

/**
 * Everything a hosting plan checks (rule 6): the lab is the caller's, the release is an
 * exact release of that lab with the digest given, the profile exists and the bounds are
 * sane; what review it will need (public or GPU hosting always waits for an operator) and
 * what it costs while it stands. Nothing starts.
 */
export async function prepareHosting(deps: Deps, caller: Caller, labId: string, req: HostingRequest, param = 'release'): Promise<{
  proposal: HostingProposal; findings: Finding[]; release: ReleaseRow; profile: ComputeProfileRow; smokeInputs: Record<string, unknown>;
}> {
  const lab = await ownedLab(deps, caller, labId);
  const ref = parseReference(req.release.reference, true);
  if (!ref) throw errors.validation('parameter_invalid_format', 'release.reference must be <namespace>/<name>@<version>.', `${param}.reference`);
  const release = await findVisibleRelease(deps.db, caller.account.id, { ...ref, version: ref.version! });
  if (!release || release.account_id !== lab.account_id || release.name !== lab.name) {
    throw errors.notFound('release_not_found', `release ${req.release.reference} of this lab`, `${param}.reference`);
  }
  const digest = release.package_sha256.replace(/^sha256:/, '');
  if (req.release.sha256 !== digest) {
    throw errors.validation('checksum_mismatch', `${req.release.reference} has package digest ${digest}, not ${req.release.sha256}.`, `${param}.sha256`);
  }
  const profileId = req.compute_profile_id ?? 'cpu-small';
  const profile = await deps.profiles(profileId);
  if (!profile) throw errors.validation('compute_profile_not_found', `No compute profile ${profileId}; see GET /v1/compute-profiles.`, 'compute_profile_id');
  const min = req.min_instances ?? 1;
  const max = req.max_instances ?? Math.max(1, min);
  if (max < min) throw errors.validation('parameter_out_of_range', `max_instances (${max}) must be at least min_instances (${min}).`, 'max_instances');
  const visibility = req.visibility ?? lab.visibility;
  const findings: Finding[] = [];
  if (!release.archive_key) findings.push({ severity: 'blocking', code: 'release_not_runnable', message: 'This release has no package archive to host.', path: `${param}.reference` });
  for (const p of release.runtime_problems ?? []) findings.push({ severity: 'blocking', code: 'runtime_unsatisfiable', message: `The platform runtime cannot satisfy this release: ${p}.`, path: `${param}.reference` });
  const RANK = { private: 0, team: 1, public: 2 } as const;
  if (RANK[visibility] > RANK[release.visibility]) {
    // Hosting does not widen who may see a release: make the lab more visible first.
    findings.push({ severity: 'blocking', code: 'visibility_exceeds_release', message: `${visibility} hosting of a ${release.visibility} release; change the lab's visibility first (PUT /v1/labs/${lab.id}/visibility).`, path: 'visibility' });
  }
  const smokeInputs = smokeInputsOf(release.manifest);
  if (!Object.keys(smokeInputs).length) {
    findings.push({ severity: 'warning', code: 'smoke_inputs_missing', message: 'The release declares no smoke inputs; the deployment checks run it with its defaults.', path: `${param}.reference` });
  }
  const reasons = [...(visibility === 'public' ? ['public hosting'] : []), ...(profile.kind === 'gpu' ? ['GPU compute'] : [])];
  return {
    release, profile, smokeInputs, findings,
    proposal: {
      lab_id: lab.id, release_id: release.id, reference: `${release.namespace}/${release.name}@${release.version}`, package_sha256: digest,
      compute_profile: profile.id, min_instances: min, max_instances: max, visibility, smoke_inputs_sha256: digestJson(smokeInputs),
      approval_required: reasons.length > 0, approval_reasons: reasons, hourly_micros: min * profile.price_per_second_micros * 3600,
    },
  };
}

/**
 * Execution rechecks (rule 7) permissions, release bytes' identity, settings, environment
 * and smoke-file identities: the same preparation again must give the same proposal.
 */
export async function recheckHosting(deps: Deps, caller: Caller, p: HostingProposal): Promise<void> {
  const again = await prepareHosting(deps, caller, p.lab_id, {
    release: { reference: p.reference, sha256: p.package_sha256 }, compute_profile_id: p.compute_profile, min_instances: p.min_instances, max_instances: p.max_instances, visibility: p.visibility,
  }, 'plan_id');
  if (digestJson(again.proposal) !== digestJson(p) || again.findings.some((f) => f.severity === 'blocking')) {
    throw planUnavailable('The release, its environment or its smoke fixtures changed since this plan was prepared; prepare it again.', null);
  }
}

import type { Deps, Caller } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { hostingOfLabNamed, HOSTING_ENDED, type HostingRow } from '../../storage/db/hosting.ts';
import { findVisibleRelease, parseReference, type ReleaseRow } from '../../storage/db/releases.ts';

/**
 * The hosting of an exact release as the caller may see it, with that release: 404
 * `release_not_found` unless the release is visible to the caller, its lab hosts exactly
 * it, and (private hosting) the caller owns it — hosting a release does not widen who may
 * see it: private hosting is the owner's, team hosting its team's (whom the release is
 * visible to), public anyone's. A digest other than the hosted one is 422
 * `checksum_mismatch` on `sha256`. An ended hosting is none, unless `ended` asks for it
 * (an invocation plan says why it cannot run rather than that nothing is there).
 */
export async function visibleHostedRelease(
  deps: Deps, caller: Caller, reference: string, sha256: string, opts: { ended?: boolean } = {},
): Promise<{ release: ReleaseRow; hosting: HostingRow }> {
  const ref = parseReference(reference, true);
  if (!ref) throw errors.validation('parameter_invalid_format', 'reference must be <namespace>/<name>@<version>.', 'reference');
  const release = await findVisibleRelease(deps.db, caller.account.id, { ...ref, version: ref.version! });
  const hosting = release && await hostingOfLabNamed(deps.db, release.account_id, release.name);
  const owner = release?.account_id === caller.account.id;
  if (!release || !hosting || hosting.release_id !== release.id || (!opts.ended && HOSTING_ENDED.includes(hosting.status)) || (hosting.visibility === 'private' && !owner)) {
    throw errors.notFound('release_not_found', 'hosted release', 'reference');
  }
  if (sha256 !== hosting.package_sha256) throw errors.validation('checksum_mismatch', `${reference} is hosted with package digest ${hosting.package_sha256}.`, 'sha256');
  return { release: release as ReleaseRow, hosting };
}

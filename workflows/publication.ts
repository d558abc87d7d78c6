import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { PublicationActivities } from '../activities/publication.ts';
import { computeTaskQueue } from '../kernel/workflowNames.ts';

const control = proxyLocalActivities<PublicationActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 10 } });
const compute = proxyActivities<PublicationActivities>({
  taskQueue: computeTaskQueue('cpu-small'),
  scheduleToStartTimeout: '10 minutes',
  startToCloseTimeout: '15 minutes',
  retry: { maximumAttempts: 3 },
});

/**
 * Workflow `publication-<id>`: pack the revision twice (the digest must not change), refuse
 * a lab the runtime cannot satisfy, smoke-run its declared smoke inputs, and only then
 * record the immutable release. Any failure leaves nothing published.
 */
export async function publicationWorkflow(args: { publicationId: string }): Promise<string> {
  const { publicationId } = args;
  try {
    const info = await control.publicationInfo(publicationId);
    const first = await compute.packRevision(publicationId);
    const second = await compute.packRevision(publicationId);
    if (first.package_sha256 !== second.package_sha256) {
      await control.failPublication(publicationId, [{ severity: 'blocking', code: 'package_not_deterministic', message: `Packing twice gave ${first.package_sha256} and ${second.package_sha256}.`, path: null }]);
      return 'failed';
    }
    if (first.runtime_problems.length) {
      await control.failPublication(publicationId, first.runtime_problems.map((p) => ({ severity: 'blocking' as const, code: 'runtime_unsatisfiable', message: p, path: 'lab.yaml' })));
      return 'failed';
    }
    if (info.smokeInputs) {
      const smoke = await compute.smokeTest(publicationId, info.smokeInputs);
      if (!smoke.ok) {
        await control.failPublication(publicationId, [{ severity: 'blocking', code: 'smoke_run_failed', message: smoke.message, path: 'lab.yaml#/smoke' }]);
        return 'failed';
      }
    }
    await control.recordRelease(publicationId, first, info.smokeInputs ? 'smoke_tested' : 'unqualified');
    return 'published';
  } catch (err) {
    await control.failPublication(publicationId, [failureFinding(err)]);
    return 'failed';
  }
}

/**
 * A failed step as a finding with the activity's own words: an activity failure's message
 * is only "Activity task failed", its cause says why (e.g. the runtime's packer refusing
 * the lab, type `package_invalid`).
 */
function failureFinding(err: unknown) {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  const code = cause instanceof ApplicationFailure && cause.type === 'package_invalid' ? 'package_invalid' : 'publication_error';
  const message = cause instanceof Error && cause.message ? cause.message : 'publication failed';
  return { severity: 'blocking' as const, code, message, path: code === 'package_invalid' ? 'lab.yaml' : null };
}

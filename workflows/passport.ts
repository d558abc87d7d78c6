import { proxyActivities, type RetryPolicy } from '@temporalio/workflow';
import type { PassportActivities, PassportArgs } from '../activities/passport/activities.ts';

const retry: RetryPolicy = { maximumAttempts: 3, initialInterval: '1 second' };
// Reads of Postgres and small objects.
const quick = proxyActivities<PassportActivities>({ startToCloseTimeout: '1 minute', retry });
// Streams every byte of a package, tree or artifact set: long, so it heartbeats.
const streaming = proxyActivities<PassportActivities>({ startToCloseTimeout: '15 minutes', heartbeatTimeout: '30 seconds', retry });

/**
 * Workflow `passport-<id>`: the checks re-derive their evidence side by side (each
 * stages its own under the passport id), then the seal signs and stores the passport.
 * Only identifiers pass through here. A build that fails leaves nothing staged.
 */
export async function passportWorkflow(args: PassportArgs): Promise<string> {
  try {
    await Promise.all([
      streaming.passportPackageIntegrity(args),
      streaming.passportArtifactHashes(args),
      quick.passportContracts(args),
      quick.passportProvenance(args),
      quick.passportReproducibility(args),
    ]);
    return await quick.sealPassport(args);
  } catch (err) {
    await quick.discardPassport(args);
    throw err;
  }
}

import type { InvocationArtifactRow, InvocationRow } from '../../storage/db/hostedInvocations.ts';
import { isoTime } from '../../storage/ids.ts';
import { microsToUsd } from '../../storage/ledger.ts';
import { invocationWorkflowId } from '../../kernel/workflowNames.ts';

/** An output artifact's immutable identity: what the invoker hashes the bytes against. */
export function invocationArtifactIdentity(a: InvocationArtifactRow) {
  return { port: a.port, file_name: a.file_name, content_type: a.content_type, format: a.format, size_bytes: Number(a.size_bytes), sha256: a.sha256 };
}

/**
 * An invocation as its invoking account reads it: status, release and input identity,
 * the result values as stored (bounded by the execution), what was reserved and settled,
 * the lease, and its artifacts' identities (their bytes are read separately).
 */
export function invocationView(r: InvocationRow, artifacts: InvocationArtifactRow[]) {
  return {
    object: 'hosted_invocation', id: r.id, invocation_id: r.id, status: r.status,
    reference: r.reference, sha256: r.package_sha256, lab_id: r.lab_id, compute_profile: r.compute_profile, max_seconds: r.max_seconds,
    inputs_sha256: r.inputs_sha256, inputs: r.inputs, seed: r.seed, outputs: r.outputs, error: r.error,
    credits_reserved: microsToUsd(Number(r.reserved_micros)), credits_settled: r.settled_micros === null ? null : microsToUsd(Number(r.settled_micros)),
    lease_expires_at: isoTime(r.lease_expires_at), cancel_requested_at: isoTime(r.cancel_requested_at), attempts: r.attempts,
    plan_id: r.plan_id, workflow_id: invocationWorkflowId(r.id),
    created_at: isoTime(r.created_at), started_at: isoTime(r.started_at), finished_at: isoTime(r.finished_at),
    artifacts: artifacts.map(invocationArtifactIdentity),
  };
}

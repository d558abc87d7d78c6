import type { HostingEvent, HostingRow } from '../../storage/db/hosting.ts';
import { isoTime } from '../../storage/ids.ts';
import { hostingWorkflowId } from '../../kernel/workflowNames.ts';

/** A lab's hosting as its owner reads it: approval, exact release, each check, status, revision and history. */
export function hostingView(h: HostingRow, events: HostingEvent[]) {
  return {
    object: 'hosting', lab_id: h.lab_id, status: h.status, revision: h.revision, pending_action: h.pending_action,
    ready: h.status === 'ready',
    release: { release_id: h.release_id, reference: h.reference, sha256: h.package_sha256 },
    compute_profile: h.compute_profile, min_instances: h.min_instances, max_instances: h.max_instances, visibility: h.visibility,
    approval: h.approval, checks: h.checks, plan_id: h.plan_id, workflow_id: hostingWorkflowId(h.lab_id),
    history: events.map((e) => ({ at: isoTime(e.at), status: e.status, kind: e.kind, actor: e.actor, message: e.message })),
    created_at: isoTime(h.created_at), updated_at: isoTime(h.updated_at), ready_at: isoTime(h.ready_at), ended_at: isoTime(h.ended_at),
  };
}

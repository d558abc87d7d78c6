import type { PublicationRow } from '../../storage/db/publications.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { isoTime } from '../../storage/ids.ts';
import { choose, type NextStep } from '../tools/tool.ts';

/** A publication with the workspace of the revision it publishes (publications name only the revision). */
export type PublicationOf = PublicationRow & { workspace_id: string };

/**
 * Why a failed publication failed, as a run's or an invocation's ending says it: the
 * workflow records the failure as blocking findings, the first of which names the step.
 */
function failureOf(findings: Finding[]): { code: string; message: string } {
  return { code: findings[0]?.code ?? 'publication_error', message: findings.map((f) => f.message).join(' ') || 'The publication failed.' };
}

const referenceOf = (p: PublicationOf) => `${p.namespace}/${p.name}@${p.version}`;

/** A publication as publish_execute and publication_get answer it (and an MCP task of publish_execute, at its end). */
export function publicationView(p: PublicationOf) {
  const findings = p.status === 'failed' ? (p.findings ?? []) as Finding[] : [];
  return {
    object: 'publication' as const,
    publication_id: p.id,
    status: p.status,
    reference: referenceOf(p),
    release_id: p.status === 'published' ? p.release_id : null,
    workspace_id: p.workspace_id,
    revision_id: p.revision_id,
    approval: p.approval,
    error: p.status === 'failed' ? failureOf(findings) : null,
    findings,
    created_at: isoTime(p.created_at),
    finished_at: isoTime(p.finished_at),
  };
}

/** Where a publication leads: follow it while it is publishing, inspect its release, or fix what failed. */
export function publicationNextSteps(p: PublicationOf): NextStep[] {
  const reference = referenceOf(p);
  switch (p.status) {
    case 'publishing':
      return [{ tool: 'publication_get', description: 'Follow it: packing twice and the smoke run take a minute or more; read it again until it is published or failed.', arguments: { publication_id: p.id } }];
    case 'published':
      return [{ tool: 'hub_inspect', description: 'Inspect the release it recorded.', arguments: { reference } }];
    case 'failed':
      return [
        { tool: 'workspace_get', description: 'Nothing was released and the version is free again: read the revision it published to fix what `error` and `findings` name.', arguments: { workspace_id: p.workspace_id, revision_id: p.revision_id } },
        { tool: 'publish_prepare', description: 'Once the fix is applied, prepare the same version from the fixed revision.', arguments: { workspace_id: p.workspace_id, revision_id: choose('the fixed revision (workspace_change_apply answers it)'), version: p.version } },
      ];
  }
}

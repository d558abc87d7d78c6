import type { PublicationRow } from '../../storage/db/publications.ts';

/** A publication as publish_execute answers it (and an MCP task of it, at its end). */
export function publicationView(p: Pick<PublicationRow, 'id' | 'status' | 'namespace' | 'name' | 'version' | 'approval' | 'findings'>) {
  return {
    object: 'publication' as const,
    publication_id: p.id,
    status: p.status,
    reference: `${p.namespace}/${p.name}@${p.version}`,
    approval: p.approval,
    ...(p.status === 'failed' ? { findings: p.findings ?? [] } : {}),
  };
}

import type { Silico } from '../../client.ts';
import { EXIT, table, type Out } from '../output.ts';

/** `silico bio search|fetch`: approved biology sources, exact records as resources. */

export async function bioSearch(client: Silico, query: string, flags: { source: string[]; limit?: number }, out: Out): Promise<number> {
  const sources = flags.source.length ? flags.source : ['uniprot', 'pdb', 'ncbi_nucleotide'];
  const res = await client.biology.search({ source_ids: sources, query, ...(flags.limit ? { limit: flags.limit } : {}) } as never);
  for (const w of res.warnings ?? []) out.note(`warning: ${w.message}`);
  out.result(res, () => table(res.hits, ['source_id', 'record_id', 'version', 'organism', 'title']));
  return EXIT.ok;
}

export async function bioFetch(client: Silico, source: string, records: string[], flags: { format?: string; sha256?: string }, out: Out): Promise<number> {
  const res = await client.biology.fetch({ source_id: source, record_ids: records, ...(flags.format ? { format: flags.format } : {}), ...(flags.sha256 ? { expected_sha256: flags.sha256 } : {}) } as never);
  out.result(res, () => `${table(res.resources, ['resource_id', 'record_id', 'version', 'media_type', 'size_bytes', 'sha256'])}\nFetched, not pinned: put one into a workspace with a change plan (file_put with its resource_id).`);
  return EXIT.ok;
}

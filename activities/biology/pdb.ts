import type { Connector } from './connector.ts';
import { SOURCE_RECORDS } from '../../kernel/biologyRecords.ts';


interface SearchAnswer { result_set?: Array<{ identifier?: string }> }
interface EntriesAnswer {
  data?: {
    entries?: Array<{
      rcsb_id?: string; struct?: { title?: string };
      rcsb_accession_info?: { major_revision?: number; minor_revision?: number };
      polymer_entities?: Array<{ rcsb_entity_source_organism?: Array<{ scientific_name?: string }> | null }> | null;
    } | null>;
  };
}

const ENTRIES = `query entries($ids: [String!]!) {
  entries(entry_ids: $ids) {
    rcsb_id
    struct { title }
    rcsb_accession_info { major_revision minor_revision }
    polymer_entities { rcsb_entity_source_organism { scientific_name } }
  }
}`;

/**
 * The RCSB PDB: full-text search (Search API v2) for entry ids, their titles, organisms
 * and revisions from the Data API (one GraphQL query for all hits), coordinates from the
 * file service as mmCIF or PDB format.
 */
export const pdb: Connector = {
  ...SOURCE_RECORDS.pdb,

  async search(http, source, query, limit) {
    const found = await http.json<SearchAnswer>(`${source.urls.search}/query`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: { type: 'terminal', service: 'full_text', parameters: { value: query } }, return_type: 'entry', request_options: { paginate: { start: 0, rows: limit } } }),
    });
    const ids = (found?.result_set ?? []).map((r) => r.identifier).filter((x): x is string => Boolean(x)).slice(0, limit);
    if (!ids.length) return [];
    const described = await http.json<EntriesAnswer>(`${source.urls.data}/graphql`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: ENTRIES, variables: { ids } }),
    });
    const byId = new Map((described?.data?.entries ?? []).filter((e) => e?.rcsb_id).map((e) => [e!.rcsb_id!.toUpperCase(), e!]));
    return ids.map((id) => {
      const e = byId.get(id.toUpperCase());
      const organism = e?.polymer_entities?.flatMap((p) => p.rcsb_entity_source_organism ?? []).find((o) => o.scientific_name)?.scientific_name ?? null;
      const rev = e?.rcsb_accession_info;
      return {
        source_id: 'pdb', record_id: id, title: e?.struct?.title ?? id, organism,
        version: rev?.major_revision !== undefined ? `${rev.major_revision}.${rev.minor_revision ?? 0}` : null,
        url: `https://www.rcsb.org/structure/${id}`,
      };
    });
  },

  recordUrl: (source, id, format) => `${source.urls.files}/download/${id}.${format === 'mmcif' ? 'cif' : 'pdb'}`,

  // Coordinate files state their revision deep inside; the file itself is the identity.
  versionOf: () => null,
};

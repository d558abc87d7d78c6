import type { Connector } from './connector.ts';
import { SOURCE_RECORDS } from '../../kernel/biologyRecords.ts';


interface SearchAnswer {
  results?: Array<{
    primaryAccession?: string; uniProtkbId?: string;
    organism?: { scientificName?: string };
    proteinDescription?: { recommendedName?: { fullName?: { value?: string } }; submissionNames?: Array<{ fullName?: { value?: string } }> };
    entryAudit?: { sequenceVersion?: number };
  }>;
}

/** UniProtKB through its REST API (rest.uniprot.org): search as JSON, entries as FASTA or JSON. */
export const uniprot: Connector = {
  ...SOURCE_RECORDS.uniprot,

  async search(http, source, query, limit) {
    const url = new URL(`${source.urls.rest}/uniprotkb/search`);
    url.search = new URLSearchParams({ query, format: 'json', size: String(limit), fields: 'accession,id,protein_name,organism_name,sequence_version' }).toString();
    const answer = await http.json<SearchAnswer>(url.toString());
    return (answer?.results ?? []).filter((r) => r.primaryAccession).slice(0, limit).map((r) => ({
      source_id: 'uniprot',
      record_id: r.primaryAccession!,
      title: r.proteinDescription?.recommendedName?.fullName?.value ?? r.proteinDescription?.submissionNames?.[0]?.fullName?.value ?? r.uniProtkbId ?? r.primaryAccession!,
      organism: r.organism?.scientificName ?? null,
      version: r.entryAudit?.sequenceVersion ? `${r.primaryAccession}.${r.entryAudit.sequenceVersion}` : null,
      url: `https://www.uniprot.org/uniprotkb/${r.primaryAccession}/entry`,
    }));
  },

  recordUrl: (source, id, format) => `${source.urls.rest}/uniprotkb/${id}.${format}`,

  // The sequence version: `SV=2` in a FASTA header, `"sequenceVersion": 2` in an entry.
  versionOf(head, id, format) {
    const m = format === 'fasta' ? /^>\S+.*\bSV=(\d+)/.exec(head) : /"sequenceVersion"\s*:\s*(\d+)/.exec(head);
    return m ? `${id}.${m[1]}` : null;
  },
};

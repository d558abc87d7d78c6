import type { Connector } from './connector.ts';
import { SOURCE_RECORDS } from '../../kernel/biologyRecords.ts';


interface SearchAnswer { esearchresult?: { idlist?: string[] } }
interface SummaryAnswer { result?: { uids?: string[] } & Record<string, { uid?: string; caption?: string; title?: string; accessionversion?: string; organism?: string } | string[] | undefined> }

/** NCBI Nucleotide through E-utilities: esearch for UIDs, esummary for what they are, efetch for the record. */
export const ncbiNucleotide: Connector = {
  ...SOURCE_RECORDS.ncbi_nucleotide,

  async search(http, source, query, limit) {
    const base = source.urls.eutils;
    const found = await http.json<SearchAnswer>(`${base}/esearch.fcgi?${new URLSearchParams({ db: 'nuccore', term: query, retmode: 'json', retmax: String(limit) })}`);
    const uids = (found?.esearchresult?.idlist ?? []).slice(0, limit);
    if (!uids.length) return [];
    const summary = await http.json<SummaryAnswer>(`${base}/esummary.fcgi?${new URLSearchParams({ db: 'nuccore', id: uids.join(','), retmode: 'json' })}`);
    return uids.map((uid) => {
      const s = summary?.result?.[uid] as { caption?: string; title?: string; accessionversion?: string; organism?: string } | undefined;
      const accession = s?.accessionversion ?? uid;
      return {
        source_id: 'ncbi_nucleotide', record_id: accession, title: s?.title ?? accession, organism: s?.organism ?? null,
        version: s?.accessionversion ?? null, url: `https://www.ncbi.nlm.nih.gov/nuccore/${accession}`,
      };
    });
  },

  recordUrl: (source, id, format) => `${source.urls.eutils}/efetch.fcgi?${new URLSearchParams({ db: 'nuccore', id, rettype: format === 'genbank' ? 'gb' : 'fasta', retmode: 'text' })}`,

  // `>NM_000518.5 ...` in FASTA; the `VERSION` line in GenBank.
  versionOf(head, _id, format) {
    const m = format === 'fasta' ? /^>(\S+\.\d+)\s/.exec(head) : /^VERSION\s+(\S+)/m.exec(head);
    return m ? m[1]! : null;
  },
};

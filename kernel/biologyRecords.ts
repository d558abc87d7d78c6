import type { BiologySourceId } from './config.ts';

/** A record format a source serves, with the media type its bytes are recorded as. */
export interface RecordFormat { mediaType: string }

/**
 * What a request may ask of one source's records, checked by the api before a fetch
 * starts and relied on by the worker's connector: its formats and its identifiers.
 */
export interface SourceRecords {
  formats: Record<string, RecordFormat>;
  defaultFormat: string;
  /** Whether `id` is a record identifier of this source (it becomes part of a URL path). */
  validRecordId(id: string): boolean;
}

// UniProtKB accessions (https://www.uniprot.org/help/accession_numbers).
const ACCESSION = /^([OPQ][0-9][A-Z0-9]{3}[0-9]|[A-NR-Z][0-9]([A-Z][A-Z0-9]{2}[0-9]){1,2})$/;
// Four-character PDB ids, and the extended `pdb_` ids the wwPDB has announced.
const PDB_ID = /^([0-9][A-Za-z0-9]{3}|pdb_[0-9]{4}[0-9a-z]{4})$/;
// An accession (with its version) or a numeric UID of the nuccore database.
const NUCCORE = /^([A-Z]{1,6}_?[0-9]{5,12}(\.[0-9]+)?|[0-9]{1,15})$/;

export const SOURCE_RECORDS: Record<BiologySourceId, SourceRecords> = {
  uniprot: {
    formats: { fasta: { mediaType: 'text/x-fasta' }, json: { mediaType: 'application/json' } },
    defaultFormat: 'fasta',
    validRecordId: (id) => ACCESSION.test(id),
  },
  pdb: {
    formats: { mmcif: { mediaType: 'chemical/x-mmcif' }, pdb: { mediaType: 'chemical/x-pdb' } },
    defaultFormat: 'mmcif',
    validRecordId: (id) => PDB_ID.test(id),
  },
  ncbi_nucleotide: {
    formats: { fasta: { mediaType: 'text/x-fasta' }, genbank: { mediaType: 'text/x-genbank' } },
    defaultFormat: 'fasta',
    validRecordId: (id) => NUCCORE.test(id),
  },
};

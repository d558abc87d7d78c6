import type { BiologySourceId } from '../../kernel/config.ts';
import type { Connector } from './connector.ts';
import { ncbiNucleotide } from './ncbiNucleotide.ts';
import { pdb } from './pdb.ts';
import { uniprot } from './uniprot.ts';

/** The connector of each approved source: the only sources there are. */
export const CONNECTORS: Record<BiologySourceId, Connector> = { uniprot, pdb, ncbi_nucleotide: ncbiNucleotide };

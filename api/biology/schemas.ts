/**
 * Output schemas of the biology routes: a search's normalized hits (the same shape from
 * every source, activities/biology/connector.ts BiologyHit) and a fetch's resources
 * (resourceView). The resource fields are exported for the workspace routes, which show
 * pinned resources with the same fields.
 */
import { arr, count, id, obj, record, sha256Hex, str, time, type JsonSchema } from '../schemas/common.ts';
import { BIOLOGY_SOURCE_IDS } from '../../kernel/config.ts';
import { SOURCE_RECORDS } from '../../kernel/biologyRecords.ts';

/** Every record format some source serves (kernel/biologyRecords.ts). */
export const BIOLOGY_FORMATS = [...new Set(Object.values(SOURCE_RECORDS).flatMap((c) => Object.keys(c.formats)))];
/** The media types those formats are recorded as. */
const MEDIA_TYPES = [...new Set(Object.values(SOURCE_RECORDS).flatMap((c) => Object.values(c.formats).map((f) => f.mediaType)))];

const sourceId = { enum: [...BIOLOGY_SOURCE_IDS] };
const version: JsonSchema = { type: ['string', 'null'], description: 'The record\'s version as its source states it (e.g. `P69905.2`, `NM_000518.5`, PDB revision `1.3`); null when it states none.' };

/** One search hit. Titles and organisms come from the source as they are. */
export const biologyHit: JsonSchema = record({
  source_id: sourceId,
  record_id: { type: 'string', description: 'The identifier to pass to biology_fetch.' },
  title: { type: 'string' },
  organism: { type: ['string', 'null'] },
  version,
  url: { type: 'string', format: 'uri', description: 'The record\'s page at its source, for people.' },
});

/** POST /biology/search. */
export const biologySearch: JsonSchema = record({
  object: { const: 'biology_search' },
  query: str(500),
  sources: arr(record({
    source_id: sourceId,
    status: { enum: ['answered', 'failed'], description: 'A `failed` source gave no hits; the warnings say why.' },
  }), { description: 'Each source asked, in the order asked.' }),
  hits: arr(biologyHit, { description: 'Search hits are not evidence: fetch a record to pin it.' }),
});

/** A fetched record, kept as an opaque resource (resourceView). */
export const biologyResourceProperties: Record<string, JsonSchema> = {
  resource_id: { ...id('res'), description: 'Pass it to a workspace change plan (file_put with resource_id) to pin the record.' },
  source_id: sourceId,
  record_id: str(100),
  format: { enum: BIOLOGY_FORMATS },
  version,
  retrieved_at: time,
  media_type: { enum: MEDIA_TYPES },
  sha256: { ...sha256Hex, description: 'SHA-256 of the record\'s bytes as fetched.' },
  size_bytes: count,
  url: { type: 'string', format: 'uri', description: 'The source URL the bytes were fetched from.' },
};
export const biologyResource: JsonSchema = record(biologyResourceProperties);

/** POST /biology/fetch. */
export const biologyFetch: JsonSchema = obj({
  object: { const: 'biology_fetch' },
  source_id: sourceId,
  format: { enum: BIOLOGY_FORMATS, description: 'The format asked for, or the source\'s default.' },
  resources: arr(biologyResource, { minItems: 1, description: 'One per record asked for, in the order asked.' }),
}, ['object', 'source_id', 'format', 'resources']);

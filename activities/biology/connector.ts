import type { BiologySource } from '../../kernel/config.ts';
import type { SourceHttp } from './sourceHttp.ts';
import type { SourceRecords } from '../../kernel/biologyRecords.ts';

/** A search hit, the same shape from every source. */
export interface BiologyHit { source_id: string; record_id: string; title: string; organism: string | null; version: string | null; url: string }

/**
 * What the service knows of one source's API: how to search it and normalize the hits,
 * where an exact record's bytes are, and the record's version when its first lines state
 * one. Nothing else of a record's content is read.
 */
export interface Connector extends SourceRecords {
  search(http: SourceHttp, source: BiologySource, query: string, limit: number): Promise<BiologyHit[]>;
  recordUrl(source: BiologySource, recordId: string, format: string): string;
  /** The version the record states in its first bytes, if it does. */
  versionOf(head: string, recordId: string, format: string): string | null;
}

import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { BiologyConfig, BiologySourceId } from '../../kernel/config.ts';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import type { CounterRequest, CounterState } from '../../storage/db/rateLimits.ts';
import { HashingStream } from '../../storage/digest.ts';
import { newId } from '../../storage/ids.ts';
import { recordBiologyResources } from '../../storage/db/biologyResources.ts';
import { blobKey } from '../../storage/objects.ts';
import type { BiologyHit } from './connector.ts';
import { CONNECTORS } from './sources.ts';
import { createSourceHttp, SourceError, type SourceHttp } from './sourceHttp.ts';

export type { BiologyHit } from './connector.ts';

/**
 * Where a fetch keeps the records it has fetched until it records them all: its own
 * prefix, which nothing else shares, so a fetch that fails removes everything it stored
 * (the content-addressed blobs are shared by everything the service keeps, and are
 * written only once a fetch is recorded).
 */
export const BIOLOGY_STAGING_PREFIX = 'staging/biology/';
const stagingOf = (fetchId: string) => `${BIOLOGY_STAGING_PREFIX}${fetchId}/`;

/** One record fetched and staged under its fetch (by sha256), not yet recorded. */
export interface FetchedRecord { record_id: string; url: string; sha256: string; size_bytes: number; media_type: string; version: string | null; retrieved_at: string }

/** The longest `Retry-After` a source may ask for within one request to the service. */
const MAX_RETRY_AFTER_MS = 5000;
/** How much of a record's beginning is read for the version it states. */
const HEAD_BYTES = 4096;

interface Deps {
  db: Db;
  objects: ObjectStore;
  config: BiologyConfig;
  /** Shared fixed-window counters (Postgres): a source's request rate holds across workers. */
  counters: { increment(counters: CounterRequest[]): Promise<CounterState[]> };
}

/** A source's failure as the activity's: Temporal retries what may pass (honouring Retry-After), not the rest. */
function asFailure(err: unknown): never {
  if (!(err instanceof SourceError)) throw err;
  const wait = err.retryAfterMs;
  const retryable = err.retryable && (wait === undefined || wait <= MAX_RETRY_AFTER_MS);
  throw ApplicationFailure.create({
    type: err.code, message: err.message, nonRetryable: !retryable,
    details: wait === undefined ? [] : [{ retry_after_seconds: Math.ceil(wait / 1000) }],
    ...(retryable && wait !== undefined ? { nextRetryDelay: wait } : {}),
  });
}

/**
 * The activities that reach biology sources: a search of one source (normalized hits),
 * the fetch of one exact record (its bytes hashed while they stream, stored by sha256,
 * never parsed beyond the version its first lines state), and the recording of a fetch's
 * resources, all at once.
 */
export function createBiologyActivities(deps: Deps) {
  const clients = new Map<BiologySourceId, SourceHttp>();
  const client = (id: BiologySourceId) => {
    let c = clients.get(id);
    if (!c) clients.set(id, (c = createSourceHttp(deps.config.sources[id], { allowPrivateAddresses: deps.config.allowPrivateAddresses })));
    return c;
  };

  /** Waits for a slot in the source's requests-per-second budget, counted across workers. */
  async function paced(id: BiologySourceId): Promise<void> {
    const limit = deps.config.sources[id].requestsPerSecond;
    for (;;) {
      const [slot] = await deps.counters.increment([{ key: `biology:${id}`, windowMs: 1000 }]);
      if (slot!.count <= limit) return;
      await new Promise((r) => setTimeout(r, Math.max(slot!.resetMs, 10)));
    }
  }

  /** The source's http client, each request paced. */
  const pacedClient = (id: BiologySourceId): SourceHttp => {
    const http = client(id);
    return {
      ...http,
      send: async (...args) => {
        await paced(id);
        return http.send(...args);
      },
      json: async (...args) => {
        await paced(id);
        return http.json(...args);
      },
    };
  };

  return {
    async biologySearchSource(a: { sourceId: BiologySourceId; query: string; limit: number }): Promise<BiologyHit[]> {
      try {
        return await CONNECTORS[a.sourceId].search(pacedClient(a.sourceId), deps.config.sources[a.sourceId], a.query, a.limit);
      } catch (err) {
        return asFailure(err);
      }
    },

    async biologyFetchRecord(a: { fetchId: string; sourceId: BiologySourceId; recordId: string; format: string; expectedSha256: string | null }): Promise<FetchedRecord> {
      const source = deps.config.sources[a.sourceId];
      const connector = CONNECTORS[a.sourceId];
      const dir = await mkdtemp(path.join(tmpdir(), 'silico-biology-'));
      try {
        const url = connector.recordUrl(source, a.recordId, a.format);
        const res = await pacedClient(a.sourceId).send(url).catch(asFailure);
        const hashing = new HashingStream();
        let head = '';
        const limit = source.maxRecordBytes;
        const file = path.join(dir, 'record');
        const ctx = Context.current();
        // Hashed, bounded and kept on the worker's disk while it streams: nothing is
        // stored before the bytes are known to be what was asked for.
        await pipeline(Readable.from(res.body), new Transform({
          transform(chunk: Buffer, _enc, cb) {
            if (hashing.bytes + chunk.length > limit) return cb(new SourceError('record_too_large', `${a.sourceId} sent more than ${limit} bytes for ${a.recordId}.`));
            if (head.length < HEAD_BYTES) head += chunk.subarray(0, HEAD_BYTES - head.length).toString('utf8');
            ctx.heartbeat();
            cb(null, chunk);
          },
        }), hashing, createWriteStream(file)).catch(asFailure);
        const sha256 = hashing.digest();
        if (a.expectedSha256 && sha256 !== a.expectedSha256) {
          throw ApplicationFailure.create({
            type: 'checksum_mismatch', nonRetryable: true, details: [{ record_id: a.recordId, sha256 }],
            message: `${a.sourceId} ${a.recordId} has sha256 ${sha256}, not the expected ${a.expectedSha256}; nothing was stored.`,
          });
        }
        const mediaType = connector.formats[a.format]!.mediaType;
        await deps.objects.putStream(`${stagingOf(a.fetchId)}${sha256}`, createReadStream(file), mediaType);
        return {
          record_id: a.recordId, url: res.url, sha256, size_bytes: hashing.bytes, media_type: mediaType,
          version: connector.versionOf(head, a.recordId, a.format), retrieved_at: new Date().toISOString(),
        };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },

    /**
     * Records a fetch's resources, all at once, once every record is fetched: each staged
     * record copied to its content address (by the store; one already there is kept),
     * the rows written in one transaction, then the fetch's staging removed.
     */
    async recordBiologyResources(a: { accountId: string; fetchId: string; sourceId: BiologySourceId; format: string; records: FetchedRecord[] }): Promise<string[]> {
      for (const sha of new Set(a.records.map((r) => r.sha256))) {
        if (!(await deps.objects.exists(blobKey(sha)))) await deps.objects.copy(`${stagingOf(a.fetchId)}${sha}`, blobKey(sha));
      }
      const rows = await recordBiologyResources(deps.db, a.records.map((r) => ({
        id: newId('res'), account_id: a.accountId, fetch_id: a.fetchId, source_id: a.sourceId, record_id: r.record_id, format: a.format, version: r.version,
        media_type: r.media_type, url: r.url, sha256: r.sha256, size_bytes: r.size_bytes, retrieved_at: new Date(r.retrieved_at),
      })));
      await deps.objects.deletePrefix(stagingOf(a.fetchId));
      return rows.map((r) => r.id);
    },

    /** What a fetch that ends without recording staged: removed, so it leaves nothing. */
    async discardBiologyFetch(a: { fetchId: string }): Promise<number> {
      return deps.objects.deletePrefix(stagingOf(a.fetchId));
    },
  };
}

export type BiologyActivities = ReturnType<typeof createBiologyActivities>;

import { pipeline } from 'node:stream/promises';
import { Context } from '@temporalio/activity';
import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { HashingStream } from '../storage/digest.ts';
import { memberMismatches, type Member, type Mismatch } from '../storage/datasets.ts';
import { filesById, finishDataset, getDataset } from '../storage/db/datasets.ts';

export type { Mismatch };

/** Dataset registration: every member's bytes re-hashed in the store before the manifest stands. */
export function createDatasetActivities(deps: { db: Db; objects: ObjectStore }) {
  return {
    async verifyMembers(datasetId: string): Promise<Mismatch[]> {
      const ds = await getDataset(deps.db, datasetId);
      if (!ds) throw new Error(`no dataset ${datasetId}`);
      const members = ds.manifest.members as Member[];
      const files = await filesById(deps.db, ds.account_id, members.map((m) => m.file_id));
      const actual = new Map<string, { sha256: string; size: number }>();
      for (const f of files.values()) {
        const { body } = await deps.objects.getStream(f.object_key);
        const hash = new HashingStream();
        // Drain the hashing stream, heartbeating as bytes go by (large files take a while).
        hash.on('data', () => Context.current().heartbeat());
        await pipeline(body, hash);
        actual.set(f.id, { sha256: hash.digest(), size: hash.bytes });
      }
      return memberMismatches(members, files, (f) => actual.get(f.id)!);
    },
    async finishDataset(datasetId: string, problems: Mismatch[]): Promise<void> {
      await finishDataset(deps.db, datasetId, problems);
    },
  };
}

export type DatasetActivities = ReturnType<typeof createDatasetActivities>;

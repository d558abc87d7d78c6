import { pipeline } from 'node:stream/promises';
import { Context } from '@temporalio/activity';
import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { HashingStream } from '../storage/digest.ts';
import type { Member } from '../storage/datasets.ts';

export interface Mismatch { file_id: string; problem: string }

/** Dataset registration: every member's bytes re-hashed in the store before the manifest stands. */
export function createDatasetActivities(deps: { db: Db; objects: ObjectStore }) {
  return {
    async verifyMembers(datasetId: string): Promise<Mismatch[]> {
      const ds = await deps.db('datasets').where({ id: datasetId }).first();
      const members = ds.manifest.members as Member[];
      const files = new Map((await deps.db('files').where({ account_id: ds.account_id }).whereIn('id', [...new Set(members.map((m) => m.file_id))])).map((f) => [f.id, f]));
      const out: Mismatch[] = [];
      const checked = new Map<string, { sha256: string; size: number }>();
      for (const m of members) {
        const f = files.get(m.file_id);
        if (!f) {
          out.push({ file_id: m.file_id, problem: 'no such file in this account' });
          continue;
        }
        let actual = checked.get(f.id);
        if (!actual) {
          const { body } = await deps.objects.getStream(f.object_key);
          const hash = new HashingStream();
          // Drain the hashing stream, heartbeating as bytes go by (large files take a while).
          hash.on('data', () => Context.current().heartbeat());
          await pipeline(body, hash);
          actual = { sha256: hash.digest(), size: hash.bytes };
          checked.set(f.id, actual);
        }
        if (actual.sha256 !== m.sha256) out.push({ file_id: m.file_id, problem: `sha256 is ${actual.sha256}, not ${m.sha256}` });
        else if (actual.size !== m.size_bytes) out.push({ file_id: m.file_id, problem: `size_bytes is ${actual.size}, not ${m.size_bytes}` });
      }
      return out;
    },
    async finishDataset(datasetId: string, problems: Mismatch[]): Promise<void> {
      await deps.db('datasets').where({ id: datasetId, status: 'registering' }).update({
        status: problems.length ? 'failed' : 'registered', problems: JSON.stringify(problems), registered_at: problems.length ? null : deps.db.fn.now(),
      });
    },
  };
}

export type DatasetActivities = ReturnType<typeof createDatasetActivities>;

import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';

/** What a passport check reads: Postgres, the object store, and a heartbeat for long reads. */
export interface CheckDeps { db: Db; objects: ObjectStore; beat: () => void }

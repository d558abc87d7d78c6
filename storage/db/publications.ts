import type { Db } from './knex.ts';

/** Ends a publication that is still publishing as failed, with its findings (its version is free again). */
export async function failPublication(db: Db, id: string, findings: unknown[]): Promise<void> {
  await db('publications').where({ id, status: 'publishing' }).update({ status: 'failed', findings: JSON.stringify(findings), finished_at: db.fn.now() });
}

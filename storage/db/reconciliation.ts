import type { Db } from './knex.ts';

/** A record a workflow owns that is not in a terminal state yet. */
export interface OpenRecord { kind: 'run' | 'publication' | 'dataset'; id: string }

/**
 * Records older than `olderThanSeconds` that their workflow should have ended by now if
 * it were gone: runs not terminal, publications publishing, dataset versions registering.
 */
export async function openRecords(db: Db, olderThanSeconds: number, limit = 500): Promise<OpenRecord[]> {
  const cutoff = db.raw(`now() - make_interval(secs => ?)`, [olderThanSeconds]);
  const [runs, publications, datasets] = await Promise.all([
    db('runs').whereIn('status', ['queued', 'running', 'cancelling']).where('created_at', '<', cutoff).limit(limit).pluck('id'),
    db('publications').where({ status: 'publishing' }).where('created_at', '<', cutoff).limit(limit).pluck('id'),
    db('datasets').where({ status: 'registering' }).where('created_at', '<', cutoff).limit(limit).pluck('id'),
  ]);
  return [
    ...runs.map((id: string) => ({ kind: 'run' as const, id })),
    ...publications.map((id: string) => ({ kind: 'publication' as const, id })),
    ...datasets.map((id: string) => ({ kind: 'dataset' as const, id })),
  ];
}

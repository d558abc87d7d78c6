import type { Db } from './knex.ts';

/** A record a workflow owns that is not in a terminal state yet. */
export interface OpenRecord {
  kind: 'run' | 'publication' | 'dataset' | 'experiment' | 'invocation' | 'hosting' | 'session' | 'purchase';
  /** A hosting's lifecycle generation. */
  generation?: number;
  id: string;
  /** A run's study, whose workflow starts the run's own when its turn comes. */
  experimentId?: string | null;
}

/**
 * Records older than `olderThanSeconds` that their workflow should have ended by now if
 * it were gone: runs not terminal, publications publishing, dataset versions registering, studies running
 * (listed after their runs, so a pass ends a study's runs before the study), invocations
 * queued or running under no live lease, hostings not ended, and open sessions (whose workflow lives as long as they do).
 */
export async function openRecords(db: Db, olderThanSeconds: number, limit = 500): Promise<OpenRecord[]> {
  const cutoff = db.raw(`now() - make_interval(secs => ?)`, [olderThanSeconds]);
  const [runs, publications, datasets, experiments, invocations, hostings, sessions, purchases] = await Promise.all([
    db('runs').whereIn('status', ['queued', 'running', 'cancelling']).where('created_at', '<', cutoff).limit(limit).select('id', 'experiment_id'),
    db('publications').where({ status: 'publishing' }).where('created_at', '<', cutoff).limit(limit).pluck('id'),
    db('datasets').where({ status: 'registering' }).where('created_at', '<', cutoff).limit(limit).pluck('id'),
    db('experiments').where({ status: 'running' }).where('created_at', '<', cutoff).limit(limit).pluck('id'),
    // One under a live lease is being carried by its worker, with or without a workflow; one
    // without a workflow whose lease lapsed in the last minutes is the workers' recovery's.
    db('hosted_invocations').whereIn('status', ['queued', 'running']).where('created_at', '<', cutoff)
      .where((q) => q.whereNull('lease_expires_at')
        .orWhere((r) => r.where('lease_expires_at', '<', db.fn.now()).whereNotNull('workflow_started_at'))
        .orWhere('lease_expires_at', '<', db.raw(`now() - interval '5 minutes'`)))
      .limit(limit).pluck('id'),
    db('hostings').whereNotIn('status', ['retired', 'failed', 'rejected']).where('created_at', '<', cutoff).limit(limit).select('lab_id', 'generation'),
    db('sessions').where({ status: 'open' }).where('created_at', '<', cutoff).limit(limit).pluck('id'),
    // A purchase is open until its expiry: only one past it can be left without its ending.
    db('purchases').where({ status: 'pending' }).where('created_at', '<', cutoff).where('expires_at', '<', db.fn.now()).limit(limit).pluck('id'),
  ]);
  return [
    ...runs.map((r: { id: string; experiment_id: string | null }) => ({ kind: 'run' as const, id: r.id, experimentId: r.experiment_id })),
    ...publications.map((id: string) => ({ kind: 'publication' as const, id })),
    ...datasets.map((id: string) => ({ kind: 'dataset' as const, id })),
    ...experiments.map((id: string) => ({ kind: 'experiment' as const, id })),
    ...invocations.map((id: string) => ({ kind: 'invocation' as const, id })),
    ...hostings.map((h: { lab_id: string; generation: number }) => ({ kind: 'hosting' as const, id: h.lab_id, generation: h.generation })),
    ...sessions.map((id: string) => ({ kind: 'session' as const, id })),
    ...purchases.map((id: string) => ({ kind: 'purchase' as const, id })),
  ];
}

import type { Knex } from 'knex';

/**
 * Every plan looks for the newest identical completed run (a reuse source), with a seed or
 * without one. Ordered by `finished_at` within the computation's identity, both lookups
 * read one index entry per account, however many replicates the account has run (the
 * index of migration 028 made the seedless one sort all of them). Runs that were reuses
 * are never sources, so they are left out of the index.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw('DROP INDEX IF EXISTS runs_reusable');
  await k.raw(`CREATE INDEX runs_reusable_newest ON runs (account_id, package_sha256, inputs_sha256, compute_profile, runtime_sha256, finished_at DESC)
    WHERE status = 'completed' AND reused_from IS NULL`);
  await k.raw(`CREATE INDEX runs_reusable_seed ON runs (account_id, package_sha256, inputs_sha256, compute_profile, runtime_sha256, seed, finished_at DESC)
    WHERE status = 'completed' AND reused_from IS NULL`);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP INDEX IF EXISTS runs_reusable_seed');
  await k.raw('DROP INDEX IF EXISTS runs_reusable_newest');
  await k.raw(`CREATE INDEX runs_reusable ON runs (account_id, package_sha256, inputs_sha256, compute_profile, runtime_sha256, seed) WHERE status = 'completed'`);
}

import type { Knex } from 'knex';

/**
 * A study of a fourth kind: the calibration of an imported PEtab problem
 * (`petab_calibration`), its design the import's estimated parameters, its runs each an
 * engine process carrying local starts or profiles, and what it found in `analysis` as for
 * the other kinds. The study names the import it calibrates.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw('ALTER TABLE experiments DROP CONSTRAINT IF EXISTS experiments_kind');
  await k.raw(`ALTER TABLE experiments ADD CONSTRAINT experiments_kind CHECK (kind IN ('arms', 'sensitivity', 'calibration', 'petab_calibration'))`);
}

export async function down(k: Knex): Promise<void> {
  await k('experiments').where({ kind: 'petab_calibration' }).delete();
  await k.raw('ALTER TABLE experiments DROP CONSTRAINT IF EXISTS experiments_kind');
  await k.raw(`ALTER TABLE experiments ADD CONSTRAINT experiments_kind CHECK (kind IN ('arms', 'sensitivity', 'calibration'))`);
}

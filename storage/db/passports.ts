import type { Db } from './knex.ts';
import type { RunRow } from './runs.ts';

/** A public key that signs (or signed) passports, as every replica lists it. */
export interface PassportKeyRow { key_id: string; alg: 'Ed25519'; public_key_pem: string; created_at: Date; retired_at: Date | null }

/** One stored passport: who owns it, what it is about, and its JSON text exactly as signed. */
export interface PassportRow {
  id: string; account_id: string; subject_kind: 'run' | 'workspace_revision' | 'experiment'; run_id: string | null;
  workspace_id: string | null; revision_id: string | null; experiment_id: string | null; key_id: string; document: string; created_at: Date;
}

/** Every key, oldest first: retired ones too, so passports they signed stay verifiable. */
export async function listPassportKeys(db: Db): Promise<PassportKeyRow[]> {
  return db('passport_keys').orderBy([{ column: 'created_at' }, { column: 'key_id' }]);
}

/** The one key that signs now, if any. */
export async function activePassportKey(db: Db): Promise<PassportKeyRow | undefined> {
  return db('passport_keys').whereNull('retired_at').first();
}

/**
 * Records a public key as the signing key and retires the one before it, in one
 * transaction (concurrent registrations queue on a table lock). A key already recorded
 * is left as it is, retired or not: false.
 */
export async function registerPassportKey(db: Db, key: { key_id: string; public_key_pem: string }): Promise<boolean> {
  return db.transaction(async (trx) => {
    await trx.raw('LOCK TABLE passport_keys IN SHARE ROW EXCLUSIVE MODE');
    if (await trx('passport_keys').where({ key_id: key.key_id }).first('key_id')) return false;
    await trx('passport_keys').whereNull('retired_at').update({ retired_at: trx.fn.now() });
    await trx('passport_keys').insert({ key_id: key.key_id, alg: 'Ed25519', public_key_pem: key.public_key_pem });
    return true;
  });
}

/** Evidence of some checks of a passport being built (its workflow's claim check). */
export async function stageEvidence(db: Db, passportId: string, results: Array<{ check: string }>): Promise<void> {
  if (!results.length) return;
  await db('passport_evidence')
    .insert(results.map((r) => ({ passport_id: passportId, check: r.check, result: JSON.stringify(r) })))
    .onConflict(['passport_id', 'check']).merge(['result', 'created_at']);
}

export async function stagedEvidence<T>(db: Db, passportId: string): Promise<T[]> {
  return (await db('passport_evidence').where({ passport_id: passportId }).select('result')).map((r) => r.result as T);
}

/** Drops the staged evidence of a build that will not finish. */
export async function discardEvidence(db: Db, passportId: string): Promise<void> {
  await db('passport_evidence').where({ passport_id: passportId }).delete();
}

/** Stores a signed passport once (a retry finds it) and drops its staged evidence. */
export async function insertPassport(db: Db, row: Omit<PassportRow, 'created_at'> & { created_at: string }): Promise<void> {
  await db.transaction(async (trx) => {
    await trx('passports').insert(row).onConflict('id').ignore();
    await trx('passport_evidence').where({ passport_id: row.id }).delete();
  });
}

/** A passport of this account (another account's is the same as none), or any when no account is given. */
export async function getPassport(db: Db, id: string, accountId?: string): Promise<PassportRow | undefined> {
  const q = db('passports').where({ id });
  return (accountId ? q.andWhere({ account_id: accountId }) : q).first();
}

/**
 * Other completed runs of the run's account that ran the same package with the same
 * inputs, seed and compute profile: its replicates, newest first. A run answered from
 * another (reuse) ran nothing and holds its source's artifacts: never a replicate.
 */
export async function replicateRuns(db: Db, run: Pick<RunRow, 'id' | 'account_id' | 'package_sha256' | 'inputs' | 'seed' | 'compute_profile'>, limit = 20): Promise<Array<{ id: string; finished_at: Date }>> {
  return db('runs')
    .where({ account_id: run.account_id, status: 'completed', package_sha256: run.package_sha256, seed: run.seed, compute_profile: run.compute_profile })
    .andWhereRaw('inputs = ?::jsonb', [JSON.stringify(run.inputs)])
    .andWhereNot({ id: run.id })
    .whereNull('reused_from')
    .orderBy('created_at', 'desc').limit(limit)
    .select('id', 'finished_at');
}

/** A revision and its ancestors, newest first, each with its recorded tree digest and parent. */
export async function revisionLineage(db: Db, revisionId: string): Promise<Array<{ id: string; workspace_id: string; parent_revision_id: string | null; number: number; tree_sha256: string }>> {
  const { rows } = await db.raw(`
    WITH RECURSIVE lineage AS (
      SELECT id, workspace_id, parent_revision_id, number, tree_sha256 FROM revisions WHERE id = ?
      UNION ALL
      SELECT r.id, r.workspace_id, r.parent_revision_id, r.number, r.tree_sha256 FROM revisions r JOIN lineage l ON r.id = l.parent_revision_id AND r.number < l.number
    ) SELECT * FROM lineage ORDER BY number DESC`, [revisionId]);
  return rows;
}

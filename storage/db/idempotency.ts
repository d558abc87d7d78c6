import type { Db } from './knex.ts';

export type ClaimResult =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'conflict' }
  | { kind: 'in_progress'; retryAfterSeconds: number };

/**
 * Claims an idempotency key in one transaction (after brandur's rocket-rides-atomic):
 * a new key is inserted as in progress; an existing one is replayed when completed with
 * the same request, refused when the request differs, and reported in progress while
 * its lock is fresh. A lock older than `lockSeconds` belonged to a request that died and
 * is taken over. Keys older than `ttlSeconds` are forgotten.
 */
export async function claimIdempotencyKey(
  db: Db,
  c: { accountId: string; key: string; route: string; requestSha256: string; ttlSeconds: number; lockSeconds: number },
): Promise<ClaimResult> {
  return db.transaction(async (trx) => {
    await trx('idempotency_keys')
      .where({ account_id: c.accountId, key: c.key })
      .andWhere('created_at', '<', trx.raw(`now() - make_interval(secs => ?)`, [c.ttlSeconds]))
      .delete();
    const inserted = await trx('idempotency_keys')
      .insert({ account_id: c.accountId, key: c.key, route: c.route, request_sha256: c.requestSha256, state: 'in_progress', locked_at: trx.fn.now() })
      .onConflict(['account_id', 'key']).ignore()
      .returning('key');
    if (inserted.length) return { kind: 'claimed' };
    const row = await trx('idempotency_keys')
      .where({ account_id: c.accountId, key: c.key })
      .forUpdate()
      .first('route', 'request_sha256', 'state', 'response_status', 'response_body',
        trx.raw(`extract(epoch from (now() - locked_at))::float8 as lock_age`));
    if (!row) return { kind: 'in_progress', retryAfterSeconds: 1 };
    if (row.route !== c.route || row.request_sha256 !== c.requestSha256) return { kind: 'conflict' };
    if (row.state === 'completed') return { kind: 'replay', status: row.response_status, body: row.response_body };
    if (row.lock_age !== null && row.lock_age < c.lockSeconds) {
      return { kind: 'in_progress', retryAfterSeconds: Math.max(1, Math.ceil(Math.min(c.lockSeconds - row.lock_age, 5))) };
    }
    await trx('idempotency_keys').where({ account_id: c.accountId, key: c.key }).update({ locked_at: trx.fn.now() });
    return { kind: 'claimed' };
  });
}

/** Stores the response of a claimed key so later requests replay it. */
export async function completeIdempotencyKey(db: Db, accountId: string, key: string, status: number, body: unknown): Promise<void> {
  await db('idempotency_keys')
    .where({ account_id: accountId, key })
    .update({ state: 'completed', response_status: status, response_body: JSON.stringify(body), locked_at: null });
}

/** Frees a claimed key whose request failed on our side, so the client may retry it. */
export async function releaseIdempotencyKey(db: Db, accountId: string, key: string): Promise<void> {
  await db('idempotency_keys').where({ account_id: accountId, key, state: 'in_progress' }).delete();
}

/** Removes keys past their retention; returns how many. */
export async function purgeIdempotencyKeys(db: Db, ttlSeconds: number): Promise<number> {
  return db('idempotency_keys').where('created_at', '<', db.raw(`now() - make_interval(secs => ?)`, [ttlSeconds])).delete();
}

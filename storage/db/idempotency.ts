import type { Db } from './knex.ts';
import { runPrepared, statement } from './prepared.ts';

export type ClaimResult =
  | { kind: 'claimed' }
  | { kind: 'replay'; status: number; body: unknown }
  | { kind: 'conflict' }
  | { kind: 'in_progress'; retryAfterSeconds: number };

/**
 * Claims an idempotency key (after brandur's rocket-rides-atomic). A new key, or one
 * older than `ttlSeconds` (forgotten), is taken as in progress by one upsert: the common
 * case is one round trip. An existing key is then read under its row lock: replayed when
 * completed with the same request, refused when the request differs, and reported in
 * progress while its lock is fresh; a lock older than `lockSeconds` belonged to a request
 * that died and is taken over.
 */
export async function claimIdempotencyKey(
  db: Db,
  c: { accountId: string; key: string; route: string; requestSha256: string; ttlSeconds: number; lockSeconds: number },
): Promise<ClaimResult> {
  const rows = await runPrepared(db, CLAIM_KEY, [c.accountId, c.key, c.route, c.requestSha256, c.ttlSeconds]);
  if (rows.length) return { kind: 'claimed' };
  return db.transaction(async (trx) => {
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

const CLAIM_KEY = statement('claim-idempotency-key', `
  INSERT INTO idempotency_keys AS k (account_id, key, route, request_sha256, state, locked_at) VALUES ($1, $2, $3, $4, 'in_progress', now())
  ON CONFLICT (account_id, key) DO UPDATE
    SET route = EXCLUDED.route, request_sha256 = EXCLUDED.request_sha256, state = 'in_progress',
        response_status = NULL, response_body = NULL, locked_at = now(), created_at = now()
    WHERE k.created_at < now() - make_interval(secs => $5)
  RETURNING k.key`);

/** Stores the response of a claimed key so later requests replay it. */
export async function completeIdempotencyKey(db: Db, accountId: string, key: string, status: number, body: unknown): Promise<void> {
  await runPrepared(db, COMPLETE_KEY, [accountId, key, status, JSON.stringify(body)]);
}
const COMPLETE_KEY = statement('complete-idempotency-key', `
  UPDATE idempotency_keys SET state = 'completed', response_status = $3, response_body = $4::jsonb, locked_at = NULL
   WHERE account_id = $1 AND key = $2`);

/** Frees a claimed key whose request failed on our side, so the client may retry it. */
export async function releaseIdempotencyKey(db: Db, accountId: string, key: string): Promise<void> {
  await db('idempotency_keys').where({ account_id: accountId, key, state: 'in_progress' }).delete();
}

/** Removes keys past their retention; returns how many. */
export async function purgeIdempotencyKeys(db: Db, ttlSeconds: number): Promise<number> {
  return db('idempotency_keys').where('created_at', '<', db.raw(`now() - make_interval(secs => ?)`, [ttlSeconds])).delete();
}

import { randomBytes } from 'node:crypto';
import baseX from 'base-x';
import type { Db } from './knex.ts';
import { CAP_SETTING_COLUMNS, type CapSettings } from './spendCaps.ts';
import { newId } from '../ids.ts';
import { sha256Hex } from '../digest.ts';
import type { AccountRow } from './accounts.ts';

const base62 = baseX('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz');

/** Every scope the spec names. */
export const SCOPES = [
  'capabilities:read', 'hub:read', 'biology:read', 'packages:publish',
  'workspaces:read', 'workspaces:write', 'runs:read', 'runs:write', 'passports:read',
] as const;
/**
 * Scopes of our own beyond the spec's: `compute:buy` spends the account holder's money
 * (purchases), so it is never part of a key unless asked for by name, and no MCP tool
 * needs it.
 */
export const ADDED_SCOPES = ['compute:buy'] as const;
/** Every scope a key may hold. */
export const KEY_SCOPES = [...SCOPES, ...ADDED_SCOPES] as const;
export type Scope = (typeof KEY_SCOPES)[number];

export interface ApiKeyRow {
  id: string;
  account_id: string;
  principal_id: string;
  client_id: string;
  prefix: string;
  scopes: string[];
  name: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  rotated_from: string | null;
  created_at: Date;
}

/** What authentication resolves a presented key to. */
export interface KeyPrincipal {
  key: ApiKeyRow;
  account: AccountRow;
  /** The spend caps the account and the key are set to (what they spent is read when needed). */
  caps: CapSettings;
}

/** A secret is shown once; only its SHA-256 is stored. */
function newSecret(): string {
  return `sk_${base62.encode(randomBytes(32))}`;
}

export interface IssuedKey { secret: string; key: ApiKeyRow }

/** Issues a key for one principal in one account. */
export async function createKey(
  db: Db,
  input: { accountId: string; principalId: string; scopes: readonly string[]; expiresAt?: Date | null; name?: string; clientId?: string; rotatedFrom?: string },
): Promise<IssuedKey> {
  for (const s of input.scopes) {
    if (!(KEY_SCOPES as readonly string[]).includes(s)) throw new Error(`unknown scope ${s}`);
  }
  const secret = newSecret();
  const [key] = await db('api_keys')
    .insert({
      id: newId('key'),
      account_id: input.accountId,
      principal_id: input.principalId,
      client_id: input.clientId ?? newId('cli'),
      prefix: secret.slice(0, 10),
      key_sha256: sha256Hex(secret),
      scopes: [...input.scopes],
      name: input.name ?? null,
      expires_at: input.expiresAt ?? null,
      rotated_from: input.rotatedFrom ?? null,
    })
    .returning(['id', 'account_id', 'principal_id', 'client_id', 'prefix', 'scopes', 'name', 'expires_at', 'revoked_at', 'rotated_from', 'created_at']);
  return { secret, key: key as ApiKeyRow };
}

/**
 * Resolves a presented secret to its key and account in one query. Returns the row even
 * when expired or revoked; the caller decides (all of those are a 401).
 */
export async function findKeyBySecret(db: Db, secret: string): Promise<KeyPrincipal | undefined> {
  return findKeyByHash(db, sha256Hex(secret));
}

/** The same lookup by the stored SHA-256 of the secret. */
export async function findKeyByHash(db: Db, keySha256: string): Promise<KeyPrincipal | undefined> {
  const row = await db('api_keys as k')
    .join('accounts as a', 'a.id', 'k.account_id')
    .where('k.key_sha256', keySha256)
    .first(
      'k.id', 'k.account_id', 'k.principal_id', 'k.client_id', 'k.prefix', 'k.scopes', 'k.name',
      'k.expires_at', 'k.revoked_at', 'k.rotated_from', 'k.created_at',
      db.raw(`row_to_json(a.*) as account`), db.raw(CAP_SETTING_COLUMNS),
    );
  if (!row) return undefined;
  const { account, a_monthly, a_run, k_monthly, k_run, ...key } = row as ApiKeyRow & CapSettings & { account: AccountRow & { created_at: string } };
  return { key, account: { ...account, created_at: new Date(account.created_at) }, caps: { a_monthly, a_run, k_monthly, k_run } };
}

export async function listKeys(db: Db, accountId?: string): Promise<ApiKeyRow[]> {
  const q = db('api_keys').select('id', 'account_id', 'principal_id', 'client_id', 'prefix', 'scopes', 'name', 'expires_at', 'revoked_at', 'rotated_from', 'created_at').orderBy('created_at');
  return accountId ? q.where({ account_id: accountId }) : q;
}

export async function getKey(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  return db('api_keys').where({ id }).first('id', 'account_id', 'principal_id', 'client_id', 'prefix', 'scopes', 'name', 'expires_at', 'revoked_at', 'rotated_from', 'created_at');
}

/** Revokes a key at once; idempotent (the first revocation time is kept). */
export async function revokeKey(db: Db, id: string): Promise<boolean> {
  const n = await db('api_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: db.fn.now() });
  return n > 0;
}

/**
 * Rotation issues a new secret with the same scopes, expiry and client id (so hosted
 * approvals bound to the client survive) and revokes the old key, in one transaction.
 */
export async function rotateKey(db: Db, id: string): Promise<IssuedKey> {
  return db.transaction(async (trx) => {
    const old = await trx('api_keys').where({ id }).forUpdate().first();
    if (!old) throw new Error(`no key ${id}`);
    if (old.revoked_at) throw new Error(`key ${id} is revoked`);
    const issued = await createKey(trx, {
      accountId: old.account_id, principalId: old.principal_id, scopes: old.scopes,
      expiresAt: old.expires_at, name: old.name ?? undefined, clientId: old.client_id, rotatedFrom: old.id,
    });
    await trx('api_keys').where({ id }).update({ revoked_at: trx.fn.now() });
    return issued;
  });
}

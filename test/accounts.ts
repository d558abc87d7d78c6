import type { Db } from '../storage/db/knex.ts';
import { createAccount } from '../storage/db/accounts.ts';
import { createKey, SCOPES } from '../storage/db/apiKeys.ts';
import { grantCompute } from '../storage/ledger.ts';

/**
 * An account made straight in the state of record, as the operator's tools make one: its
 * namespace, `usd` of compute granted, and one key (every scope unless told otherwise).
 * The tests' accounts and the soak's come from here.
 */
export async function makeAccount(db: Db, opts: { namespace: string; usd?: number; scopes?: readonly string[]; kind?: 'personal' | 'team'; gateway?: boolean; expiresAt?: Date | null }) {
  const { account, principalId } = await createAccount(db, { namespace: opts.namespace, kind: opts.kind ?? 'personal', gatewayEnabled: opts.gateway ?? true });
  if (opts.usd) await grantCompute(db, account.id, Math.round(opts.usd * 1e6), `test:${account.id}`);
  const issued = await createKey(db, { accountId: account.id, principalId, scopes: opts.scopes ?? SCOPES, expiresAt: opts.expiresAt ?? null });
  return { account, principalId, key: issued.secret, keyId: issued.key.id };
}

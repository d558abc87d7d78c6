import type { Db } from './knex.ts';
import { newId } from '../ids.ts';

export interface AccountRow {
  id: string;
  namespace: string;
  kind: 'personal' | 'team';
  display_name: string;
  gateway_enabled: boolean;
  features: Record<string, boolean>;
  created_at: Date;
}

export const NAMESPACE_PATTERN = /^[a-z][a-z0-9-]{1,38}$/;

/** Creates an account with its first principal and an empty compute balance. */
export async function createAccount(
  db: Db,
  input: { namespace: string; kind: 'personal' | 'team'; displayName?: string; gatewayEnabled?: boolean },
): Promise<{ account: AccountRow; principalId: string }> {
  if (!NAMESPACE_PATTERN.test(input.namespace)) {
    throw new Error(`namespace must match ${NAMESPACE_PATTERN}`);
  }
  return db.transaction(async (trx) => {
    const [account] = await trx('accounts')
      .insert({
        id: newId('acct'),
        namespace: input.namespace,
        kind: input.kind,
        display_name: input.displayName ?? input.namespace,
        gateway_enabled: input.gatewayEnabled ?? false,
      })
      .returning('*');
    const principalId = newId('prn');
    await trx('principals').insert({ id: principalId, account_id: account.id, name: `${input.namespace}-owner` });
    await trx('compute_balances').insert({ account_id: account.id });
    return { account: account as AccountRow, principalId };
  });
}

export async function findAccountByNamespace(db: Db, namespace: string): Promise<AccountRow | undefined> {
  return db('accounts').where({ namespace }).first();
}

export async function getAccount(db: Db, id: string): Promise<AccountRow | undefined> {
  return db('accounts').where({ id }).first();
}

export async function listAccounts(db: Db): Promise<AccountRow[]> {
  return db('accounts').orderBy('created_at');
}

/** First principal of an account (the owner the operator CLI issues keys for). */
export async function ownerPrincipal(db: Db, accountId: string): Promise<string> {
  const row = await db('principals').where({ account_id: accountId }).orderBy('created_at').first();
  if (!row) throw new Error(`account ${accountId} has no principal`);
  return row.id;
}

export async function setGateway(db: Db, accountId: string, enabled: boolean): Promise<void> {
  await db('accounts').where({ id: accountId }).update({ gateway_enabled: enabled });
}

export async function setFeature(db: Db, accountId: string, flag: string, enabled: boolean): Promise<void> {
  await db('accounts')
    .where({ id: accountId })
    .update({ features: db.raw(`features || jsonb_build_object(?::text, ?::boolean)`, [flag, enabled]) });
}

/** Makes an account a member of a team account (idempotent): it sees the team's `team` labs. */
export async function addTeamMember(db: Db, teamAccountId: string, memberAccountId: string): Promise<void> {
  await db('account_members').insert({ team_account_id: teamAccountId, member_account_id: memberAccountId }).onConflict(['team_account_id', 'member_account_id']).ignore();
}

export async function removeTeamMember(db: Db, teamAccountId: string, memberAccountId: string): Promise<void> {
  await db('account_members').where({ team_account_id: teamAccountId, member_account_id: memberAccountId }).delete();
}

/** The namespaces of a team's members. */
export async function teamMembers(db: Db, teamAccountId: string): Promise<string[]> {
  return db('account_members').join('accounts', 'accounts.id', 'account_members.member_account_id')
    .where({ team_account_id: teamAccountId }).orderBy('accounts.namespace').pluck('accounts.namespace');
}

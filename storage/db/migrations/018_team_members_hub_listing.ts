import type { Knex } from 'knex';

/**
 * Two settings that mean what their words say: a lab's visibility (who may see and run
 * it: `private` its account, `team` also the team's members, `public` anyone) and its
 * Hub listing (whether Hub search offers it). A team account's members are other
 * accounts. Releases that were public were found by search before: they stay listed.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('account_members', (t) => {
    t.text('team_account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.text('member_account_id').notNullable().references('accounts.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.primary(['team_account_id', 'member_account_id']);
    t.index(['member_account_id']);
  });
  await k.schema.alterTable('labs', (t) => t.boolean('hub_listed').notNullable().defaultTo(false));
  await k.schema.alterTable('releases', (t) => t.boolean('hub_listed').notNullable().defaultTo(false));
  await k('labs').where({ visibility: 'public' }).update({ hub_listed: true });
  await k('releases').where({ visibility: 'public' }).update({ hub_listed: true });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('releases', (t) => t.dropColumn('hub_listed'));
  await k.schema.alterTable('labs', (t) => t.dropColumn('hub_listed'));
  await k.schema.dropTableIfExists('account_members');
}

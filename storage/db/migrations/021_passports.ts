import type { Knex } from 'knex';

/**
 * Passports: the public halves of the signing keys (every api replica lists them, and
 * a retired key stays listed so what it signed stays verifiable), each passport exactly
 * as signed, and the evidence a passport's checks stage while its workflow runs.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('passport_keys', (t) => {
    t.text('key_id').primary();
    t.text('alg').notNullable().checkIn(['Ed25519']);
    t.text('public_key_pem').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('retired_at', { useTz: true });
  });
  // At most one key signs: the one not retired.
  await k.raw('CREATE UNIQUE INDEX passport_keys_one_active ON passport_keys ((true)) WHERE retired_at IS NULL');
  await k.schema.createTable('passports', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('subject_kind').notNullable().checkIn(['run', 'workspace_revision']);
    t.uuid('run_id');
    t.uuid('workspace_id');
    t.uuid('revision_id');
    t.text('key_id').notNullable().references('passport_keys.key_id');
    // The JSON text as signed and served: text, not jsonb, so it comes back byte for byte.
    t.text('document').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.index(['account_id', 'created_at']);
  });
  await k.schema.createTable('passport_evidence', (t) => {
    t.text('passport_id').notNullable();
    t.text('check').notNullable();
    t.jsonb('result').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.primary(['passport_id', 'check']);
  });
}

export async function down(k: Knex): Promise<void> {
  for (const t of ['passport_evidence', 'passports', 'passport_keys']) await k.schema.dropTableIfExists(t);
}

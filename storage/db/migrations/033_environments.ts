import type { Knex } from 'knex';

/**
 * Environment locks (a lab's declared runtime resolved to exact, hashed pins) by their
 * digest, and which resolver request gave which lock, so a plan resolves a lab's
 * declaration once and every run of it names the same environment.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('environment_locks', (t) => {
    t.text('sha256').primary();
    t.text('python').notNullable();
    t.text('lock').notNullable();
    /** How many distributions it pins. */
    t.integer('distributions').notNullable();
    /** When a worker first finished building it (plans say `ready` from then on), and how long that build took. */
    t.timestamp('built_at', { useTz: true });
    t.float('build_seconds');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
  });
  await k.schema.createTable('environment_resolutions', (t) => {
    t.text('request_sha256').primary();
    t.text('lock_sha256').notNullable().references('environment_locks.sha256');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
  });
  // The environment a publication packs and smoke-runs in, and its release keeps (null: the default runtime's, before environments).
  await k.schema.alterTable('publications', (t) => t.text('environment_lock_sha256'));
  await k.schema.alterTable('releases', (t) => t.text('environment_lock_sha256'));
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('releases', (t) => t.dropColumn('environment_lock_sha256'));
  await k.schema.alterTable('publications', (t) => t.dropColumn('environment_lock_sha256'));
  await k.schema.dropTableIfExists('environment_resolutions');
  await k.schema.dropTableIfExists('environment_locks');
}

import type { Knex } from 'knex';

/** A publication: an approved release candidate on its way to becoming an immutable release. */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('publications', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.uuid('plan_id').notNullable().unique().references('plans.id');
    t.text('lab_id').notNullable().references('labs.id');
    t.uuid('revision_id').notNullable().references('revisions.id');
    t.text('namespace').notNullable();
    t.text('name').notNullable();
    t.text('version').notNullable();
    t.text('release_notes').notNullable().defaultTo('');
    t.text('status').notNullable().checkIn(['publishing', 'published', 'failed']);
    t.jsonb('findings').notNullable().defaultTo('[]');
    t.text('release_id').references('releases.id');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('finished_at', { useTz: true });
  });
  // One version of a lab is published at most once, even while in flight.
  await k.raw(`CREATE UNIQUE INDEX publications_live_version ON publications (namespace, name, version) WHERE status <> 'failed'`);
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTableIfExists('publications');
}

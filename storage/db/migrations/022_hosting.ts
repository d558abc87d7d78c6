import type { Knex } from 'knex';

/**
 * Hosting: one deployment record per lab (its lifecycle workflow is `hosting-<lab_id>`),
 * read by the api and written only by that workflow's activities, and the ordered
 * history of what happened to it (every status change, action and review).
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('hostings', (t) => {
    t.text('lab_id').primary().references('labs.id');
    t.text('account_id').notNullable().references('accounts.id');
    t.text('status').notNullable().checkIn(['requested', 'checking', 'awaiting_review', 'ready', 'paused', 'retiring', 'retired', 'failed', 'rejected']);
    // Optimistic concurrency of lifecycle changes: PATCH names the revision it saw.
    t.integer('revision').notNullable().defaultTo(1);
    t.text('release_id').notNullable().references('releases.id');
    t.text('reference').notNullable();
    t.text('package_sha256').notNullable();
    t.text('compute_profile').notNullable().references('compute_profiles.id');
    t.integer('min_instances').notNullable();
    t.integer('max_instances').notNullable();
    t.text('visibility').notNullable().checkIn(['private', 'team', 'public']);
    t.uuid('plan_id').references('plans.id');
    // {required, reasons[], decision: approved|rejected|null, actor, note, decided_at}
    t.jsonb('approval').notNullable();
    // [{check, status: passed|failed|pending, detail, checked_at}]
    t.jsonb('checks').notNullable().defaultTo('[]');
    t.text('pending_action');
    // Which generation of the lab's hosting this is: a lab hosted again after retiring
    // counts up, so a late activity of the previous lifecycle cannot write over this one.
    t.integer('generation').notNullable().defaultTo(1);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('ready_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
    t.index(['status']);
  });
  await k.schema.createTable('hosting_events', (t) => {
    t.bigIncrements('id');
    t.text('lab_id').notNullable().references('labs.id');
    t.integer('generation').notNullable();
    t.timestamp('at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.text('status').notNullable();
    t.text('kind').notNullable();
    t.text('actor');
    t.text('message').notNullable();
    t.index(['lab_id', 'generation', 'id']);
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.dropTable('hosting_events');
  await k.schema.dropTable('hostings');
}

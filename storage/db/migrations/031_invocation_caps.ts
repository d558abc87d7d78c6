import type { Knex } from 'knex';

/**
 * The cap an invocation runs under when one is lower than its longest run would cost:
 * its `max_seconds` is what that cap pays for, and an invocation stopped there ends
 * cancelled with `spend_cap_reached` (as a run does), not timed out.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('hosted_invocations', (t) => {
    t.bigInteger('cap_micros');
  });
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('hosted_invocations', (t) => {
    t.dropColumn('cap_micros');
  });
}

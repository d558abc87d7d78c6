import type { Knex } from 'knex';

/**
 * A question study's runs get their ids from Postgres: the api sends their shared record
 * and how many there are, not 100,000 ids and 100,000 equal seeds (about 4.4 MB of array
 * text the api built and Postgres parsed, inside the acceptance's 5 s). The set is then
 * accepted by 054's function, unchanged, which an api of the previous release still calls.
 */
/** 055's acceptance of a count of runs (057's down restores it, after CREATE OR REPLACE). */
export const ACCEPT_STUDY_RUN_COUNT = `
    FUNCTION silico_accept_study_runs(p_experiment text, p_run jsonb, p_count integer)
    RETURNS void LANGUAGE sql AS $$
      SELECT silico_accept_study_runs(p_experiment, p_run,
        ARRAY(SELECT gen_random_uuid() FROM generate_series(1, p_count)),
        array_fill((p_run->>'seed')::bigint, ARRAY[p_count]), 0)
    $$;
`;

export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE ${ACCEPT_STUDY_RUN_COUNT}
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP FUNCTION silico_accept_study_runs(text, jsonb, integer)');
}

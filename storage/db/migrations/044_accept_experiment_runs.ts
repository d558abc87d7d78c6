import type { Knex } from 'knex';

/**
 * A study's runs accepted slice by slice within its acceptance's one transaction: the
 * first slice with the study itself (silico_accept_experiment), the rest here, each run
 * exactly as before (silico_accept_run, its place in the study after the runs before it).
 * A 10,000-run study is one write that completes or leaves no trace, and no one statement
 * of it outlasts the dependency deadline (issue 45).
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_accept_experiment_runs(p_experiment text, p_runs jsonb, p_before integer)
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      item record;
    BEGIN
      FOR item IN SELECT value, ordinality FROM jsonb_array_elements(p_runs) WITH ORDINALITY LOOP
        PERFORM silico_accept_run(item.value->'run', NULL);
        INSERT INTO experiment_runs (run_id, experiment_id, arm_index, replicate, position)
          VALUES ((item.value->'run'->>'id')::uuid, p_experiment, (item.value->>'arm_index')::integer, (item.value->>'replicate')::integer, p_before + item.ordinality);
      END LOOP;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP FUNCTION IF EXISTS silico_accept_experiment_runs(text, jsonb, integer)');
}

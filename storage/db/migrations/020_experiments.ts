import type { Knex } from 'knex';

/**
 * Studies: an experiment row, the runs it made (arm, replicate, order of start; detached
 * runs stay listed with the time they left), and the database functions that accept a
 * whole study at once or undo that acceptance, so a study is reserved all or nothing in
 * one round trip.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('experiments', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('name').notNullable();
    t.text('goal').notNullable().defaultTo('');
    t.text('status').notNullable().checkIn(['running', 'completed', 'closed']);
    t.uuid('plan_id').references('plans.id');
    // The approved arms as the plan digested them (resolved references, seeds, prices).
    t.jsonb('arms').notNullable();
    t.specificType('workspace_ids', 'uuid[]').notNullable();
    t.bigInteger('reserved_micros').notNullable();
    // Comparison CSV and chart, stored as the account's files: [{file_id, file_name, ...}].
    t.jsonb('artifacts').notNullable().defaultTo('[]');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('closed_at', { useTz: true });
    t.index(['account_id', 'updated_at', 'id']);
  });
  await k.schema.createTable('experiment_runs', (t) => {
    t.uuid('run_id').primary().references('runs.id');
    t.text('experiment_id').notNullable().references('experiments.id');
    t.integer('arm_index').notNullable();
    t.integer('replicate').notNullable();
    // Order in which the study's workflow starts its runs.
    t.integer('position').notNullable();
    t.timestamp('detached_at', { useTz: true });
    t.unique(['experiment_id', 'position']);
  });
  await k.schema.alterTable('runs', (t) => t.index(['experiment_id']));
  await k.raw(`
    -- A study's record changes whenever one of its runs changes state, so lists sorted by
    -- "most recently changed" see run progress without the run path knowing of studies.
    CREATE FUNCTION silico_touch_experiment() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE experiments SET updated_at = now() WHERE id = NEW.experiment_id;
      RETURN NULL;
    END $$;
    CREATE TRIGGER runs_touch_experiment AFTER UPDATE OF status ON runs
      FOR EACH ROW WHEN (NEW.experiment_id IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
      EXECUTE FUNCTION silico_touch_experiment();

    -- Accepts a study, all or nothing: consumes its plan (SL409 when used), records the
    -- study, then accepts each run exactly as a lone run is accepted (its own reservation
    -- under run:<id>; SL402 for any run the balance cannot cover undoes everything).
    -- p_runs: [{run: <columns of runs>, arm_index, replicate}] in start order.
    CREATE FUNCTION silico_accept_experiment(p_experiment jsonb, p_runs jsonb, p_plan uuid)
    RETURNS SETOF experiments LANGUAGE plpgsql AS $$
    DECLARE
      exp_id text := p_experiment->>'id';
      item record;
    BEGIN
      IF p_plan IS NOT NULL AND NOT silico_consume_plan(p_plan, 'experiment:' || exp_id) THEN
        RAISE EXCEPTION 'plan % was already used', p_plan USING ERRCODE = 'SL409';
      END IF;
      INSERT INTO experiments (id, account_id, name, goal, status, plan_id, arms, workspace_ids, reserved_micros)
        SELECT exp_id, p_experiment->>'account_id', p_experiment->>'name', coalesce(p_experiment->>'goal', ''), 'running', p_plan,
               p_experiment->'arms', ARRAY(SELECT jsonb_array_elements_text(p_experiment->'workspace_ids'))::uuid[],
               (p_experiment->>'reserved_micros')::bigint;
      FOR item IN SELECT value, ordinality FROM jsonb_array_elements(p_runs) WITH ORDINALITY LOOP
        PERFORM silico_accept_run(item.value->'run', NULL);
        INSERT INTO experiment_runs (run_id, experiment_id, arm_index, replicate, position)
          VALUES ((item.value->'run'->>'id')::uuid, exp_id, (item.value->>'arm_index')::integer, (item.value->>'replicate')::integer, item.ordinality);
      END LOOP;
      RETURN QUERY SELECT * FROM experiments WHERE id = exp_id;
    END $$;

    -- Undoes the acceptance of a study whose workflow could not be started, leaving no
    -- trace; false (changing nothing) when any of its runs has left the queue.
    CREATE FUNCTION silico_unaccept_experiment(p_experiment text)
    RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
      e experiments%ROWTYPE;
      rid uuid;
    BEGIN
      SELECT * INTO e FROM experiments WHERE id = p_experiment FOR UPDATE;
      IF NOT FOUND THEN
        RETURN false;
      END IF;
      IF EXISTS (SELECT 1 FROM runs WHERE experiment_id = p_experiment AND status <> 'queued') THEN
        RETURN false;
      END IF;
      FOR rid IN SELECT run_id FROM experiment_runs WHERE experiment_id = p_experiment LOOP
        DELETE FROM experiment_runs WHERE run_id = rid;
        PERFORM silico_unaccept_run(rid);
      END LOOP;
      IF e.plan_id IS NOT NULL THEN
        UPDATE plans SET consumed_at = NULL, result_ref = NULL WHERE id = e.plan_id AND result_ref = 'experiment:' || p_experiment;
      END IF;
      DELETE FROM experiments WHERE id = p_experiment;
      RETURN true;
    END $$;

    -- Ends a run that has not begun as cancelled (nothing charged, its reservation
    -- released); a run that has begun or ended is left alone. Returns its status afterwards.
    CREATE FUNCTION silico_cancel_queued_run(p_run uuid)
    RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
      st text;
    BEGIN
      SELECT status INTO st FROM runs WHERE id = p_run FOR UPDATE;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'no run %', p_run;
      END IF;
      IF st <> 'queued' THEN
        RETURN st;
      END IF;
      RETURN silico_finish_run(p_run, 'cancelled', NULL, 0, NULL);
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP FUNCTION IF EXISTS silico_cancel_queued_run(uuid);
    DROP FUNCTION IF EXISTS silico_unaccept_experiment(text);
    DROP FUNCTION IF EXISTS silico_accept_experiment(jsonb, jsonb, uuid);
    DROP TRIGGER IF EXISTS runs_touch_experiment ON runs;
    DROP FUNCTION IF EXISTS silico_touch_experiment();
  `);
  await k.schema.alterTable('runs', (t) => t.dropIndex(['experiment_id']));
  await k.schema.dropTable('experiment_runs');
  await k.schema.dropTable('experiments');
}

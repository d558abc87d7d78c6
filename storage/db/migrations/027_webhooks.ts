import type { Knex } from 'knex';

/**
 * Signed webhooks. An account's endpoints (URL, the event types it wants, its signing
 * secret and, during a rotation, the previous one until it expires); the account's
 * events; and one delivery per (event, endpoint). Events are written by triggers in the
 * same transaction as the change they report (a run's terminal state, an experiment's
 * completion, a hosting's status, an invocation's completion): none is lost and none is
 * invented. A notice on `silico_webhook_deliveries` wakes the dispatcher, which starts one
 * delivery workflow per delivery.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('webhook_endpoints', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('url').notNullable();
    t.specificType('events', 'text[]').notNullable();
    t.text('description');
    t.text('secret').notNullable();
    t.text('previous_secret');
    t.timestamp('previous_secret_expires_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    // Removed endpoints stay for their deliveries' history; nothing is sent to them again.
    t.timestamp('removed_at', { useTz: true });
    t.index(['account_id', 'created_at', 'id']);
  });
  await k.schema.createTable('webhook_events', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('type').notNullable();
    t.jsonb('data').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.index(['account_id', 'created_at', 'id']);
  });
  await k.schema.createTable('webhook_deliveries', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('event_id').notNullable().references('webhook_events.id');
    t.text('endpoint_id').notNullable().references('webhook_endpoints.id');
    t.text('status').notNullable().checkIn(['pending', 'delivered', 'dead']);
    // A replay starts the delivery again as its next generation (its own workflow).
    t.integer('generation').notNullable().defaultTo(1);
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('last_status');
    t.text('last_error');
    t.timestamp('last_attempt_at', { useTz: true });
    t.timestamp('dispatched_at', { useTz: true });
    t.timestamp('delivered_at', { useTz: true });
    t.timestamp('dead_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.unique(['event_id', 'endpoint_id']);
    t.index(['account_id', 'status', 'created_at', 'id']);
  });
  await k.raw(`CREATE INDEX webhook_deliveries_undispatched ON webhook_deliveries (created_at) WHERE dispatched_at IS NULL`);
  await k.raw(`
    CREATE FUNCTION silico_webhook_emit(p_account text, p_type text, p_data jsonb) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      v_event text := 'evt_' || replace(gen_random_uuid()::text, '-', '');
      v_count int;
    BEGIN
      INSERT INTO webhook_events (id, account_id, type, data) VALUES (v_event, p_account, p_type, p_data);
      INSERT INTO webhook_deliveries (id, account_id, event_id, endpoint_id, status)
        SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), p_account, v_event, e.id, 'pending'
          FROM webhook_endpoints e
         WHERE e.account_id = p_account AND e.removed_at IS NULL AND p_type = ANY (e.events);
      GET DIAGNOSTICS v_count = ROW_COUNT;
      IF v_count > 0 THEN PERFORM pg_notify('silico_webhook_deliveries', v_event); END IF;
    END $$;

    CREATE FUNCTION silico_webhook_run() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.status IN ('completed', 'failed', 'cancelled', 'timed_out') AND OLD.status NOT IN ('completed', 'failed', 'cancelled', 'timed_out') THEN
        PERFORM silico_webhook_emit(NEW.account_id, 'run.' || NEW.status, jsonb_build_object(
          'object', 'run', 'run_id', NEW.id, 'status', NEW.status, 'ref', NEW.ref, 'resolved_ref', NEW.resolved_ref,
          'package_sha256', NEW.package_sha256, 'error', NEW.error, 'experiment_id', NEW.experiment_id,
          'credits_settled', CASE WHEN NEW.settled_micros IS NULL THEN NULL ELSE NEW.settled_micros::numeric / 1000000 END,
          'finished_at', to_char(coalesce(NEW.finished_at, now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER runs_webhook AFTER UPDATE OF status ON runs FOR EACH ROW EXECUTE FUNCTION silico_webhook_run();

    CREATE FUNCTION silico_webhook_experiment() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF OLD.completed_at IS NULL AND NEW.completed_at IS NOT NULL THEN
        PERFORM silico_webhook_emit(NEW.account_id, 'experiment.completed', jsonb_build_object(
          'object', 'experiment', 'experiment_id', NEW.id, 'name', NEW.name, 'status', NEW.status,
          'completed_at', to_char(NEW.completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER experiments_webhook AFTER UPDATE OF completed_at ON experiments FOR EACH ROW EXECUTE FUNCTION silico_webhook_experiment();

    CREATE FUNCTION silico_webhook_hosting() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM NEW.status THEN
        PERFORM silico_webhook_emit(NEW.account_id, 'hosting.status_changed', jsonb_build_object(
          'object', 'hosting', 'lab_id', NEW.lab_id, 'reference', NEW.reference, 'status', NEW.status,
          'previous_status', CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.status END, 'revision', NEW.revision));
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER hostings_webhook AFTER INSERT OR UPDATE OF status ON hostings FOR EACH ROW EXECUTE FUNCTION silico_webhook_hosting();

    CREATE FUNCTION silico_webhook_invocation() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.status = 'completed' AND OLD.status <> 'completed' THEN
        PERFORM silico_webhook_emit(NEW.account_id, 'invocation.completed', jsonb_build_object(
          'object', 'hosted_invocation', 'invocation_id', NEW.id, 'reference', NEW.reference, 'status', NEW.status,
          'credits_settled', CASE WHEN NEW.settled_micros IS NULL THEN NULL ELSE NEW.settled_micros::numeric / 1000000 END,
          'finished_at', to_char(coalesce(NEW.finished_at, now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER hosted_invocations_webhook AFTER UPDATE OF status ON hosted_invocations FOR EACH ROW EXECUTE FUNCTION silico_webhook_invocation();
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    DROP TRIGGER IF EXISTS runs_webhook ON runs;
    DROP TRIGGER IF EXISTS experiments_webhook ON experiments;
    DROP TRIGGER IF EXISTS hostings_webhook ON hostings;
    DROP TRIGGER IF EXISTS hosted_invocations_webhook ON hosted_invocations;
    DROP FUNCTION IF EXISTS silico_webhook_run();
    DROP FUNCTION IF EXISTS silico_webhook_experiment();
    DROP FUNCTION IF EXISTS silico_webhook_hosting();
    DROP FUNCTION IF EXISTS silico_webhook_invocation();
    DROP FUNCTION IF EXISTS silico_webhook_emit(text, text, jsonb);
  `);
  await k.schema.dropTable('webhook_deliveries');
  await k.schema.dropTable('webhook_events');
  await k.schema.dropTable('webhook_endpoints');
}

import type { Knex } from 'knex';

/**
 * An invocation accepted for a deployment that is served is carried by its serving worker
 * alone, from its announcement to its ending; its workflow is started only when that
 * worker does not carry it (the announcement missed, the worker lost). `workflow_started_at`
 * says whether it has one; the partial index is what the workers' recovery reads. Every
 * invocation before this one had its workflow from its acceptance.
 *
 * `silico_accept_invocation` accepts one in one round trip, as `silico_accept_run` does a
 * run: plan consumed (SL409 when used), maximum reserved (SL402 when the balance cannot
 * cover it; a spend cap's SLCAP from the row's trigger), row recorded, and, for a served
 * deployment (`p_announce`, its serving queue), the announcement sent at commit. Whoever
 * starts its workflow records that once it has (`workflow_started_at`).
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('hosted_invocations', (t) => {
    t.timestamp('workflow_started_at', { useTz: true });
  });
  await k('hosted_invocations').update({ workflow_started_at: k.ref('created_at') });
  await k.raw(`CREATE INDEX hosted_invocations_without_workflow ON hosted_invocations (created_at) WHERE workflow_started_at IS NULL AND status IN ('queued', 'running')`);
  await k.raw(`
    CREATE FUNCTION silico_accept_invocation(p_inv jsonb, p_plan uuid, p_announce text)
    RETURNS SETOF hosted_invocations LANGUAGE plpgsql AS $$
    DECLARE
      inv_id text := p_inv->>'id';
      rec jsonb := p_inv || jsonb_build_object('status', 'queued');
      cols text;
    BEGIN
      IF NOT silico_consume_plan(p_plan, 'invocation:' || inv_id) THEN
        RAISE EXCEPTION 'plan % was already used', p_plan USING ERRCODE = 'SL409';
      END IF;
      IF NOT silico_reserve_compute(p_inv->>'account_id', (p_inv->>'reserved_micros')::bigint, 'invocation:' || inv_id) THEN
        RAISE EXCEPTION 'available compute cannot cover % micro-dollars', p_inv->>'reserved_micros' USING ERRCODE = 'SL402';
      END IF;
      SELECT string_agg(quote_ident(key), ', ') INTO cols FROM jsonb_object_keys(rec) AS key;
      RETURN QUERY EXECUTE format('INSERT INTO hosted_invocations (%1$s) SELECT %1$s FROM jsonb_populate_record(NULL::hosted_invocations, $1) RETURNING *', cols) USING rec;
      IF p_announce IS NOT NULL THEN
        PERFORM pg_notify('silico_invocations_accepted', p_announce || ' ' || inv_id);
      END IF;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP FUNCTION IF EXISTS silico_accept_invocation(jsonb, uuid, text)');
  await k.raw('DROP INDEX IF EXISTS hosted_invocations_without_workflow');
  await k.schema.alterTable('hosted_invocations', (t) => {
    t.dropColumn('workflow_started_at');
  });
}

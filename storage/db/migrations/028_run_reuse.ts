import type { Knex } from 'knex';

/**
 * Reuse of identical runs. A run records the digests that make two runs the same
 * computation (its inputs' canonical JSON, the runtime lock it was accepted under) beside
 * the package, seed and profile it already had; `silico_reuse_run` answers a new run from
 * a completed one of the same account in one transaction: the plan consumed, nothing
 * reserved or charged (a zero reservation settled at zero, so the ledger stays whole),
 * the source's outputs and artifact records (the same stored objects, by sha256), and the
 * run completed, pointing at its source. The source is a run of the account, or of the
 * owner of a public release who allows reuse (`p_accounts`). The runs trigger reports it like any completion.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('runs', (t) => {
    t.text('inputs_sha256');
    t.text('runtime_sha256');
    t.uuid('reused_from').references('runs.id');
  });
  await k.raw(`CREATE INDEX runs_reusable ON runs (account_id, package_sha256, inputs_sha256, compute_profile, runtime_sha256, seed) WHERE status = 'completed'`);
  await k.raw(`
    CREATE FUNCTION silico_reuse_run(p_run jsonb, p_plan uuid, p_source uuid, p_accounts text[])
    RETURNS SETOF runs LANGUAGE plpgsql AS $$
    DECLARE
      v_run uuid := (p_run->>'id')::uuid;
      src runs%ROWTYPE;
    BEGIN
      SELECT * INTO src FROM runs WHERE id = p_source AND account_id = ANY (p_accounts) AND status = 'completed' FOR SHARE;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'run % cannot be reused', p_source USING ERRCODE = 'SL410';
      END IF;
      PERFORM silico_accept_run(p_run || jsonb_build_object('reserved_micros', 0, 'reused_from', p_source), p_plan);
      INSERT INTO run_artifacts (id, run_id, role, file_name, content_type, format, size_bytes, sha256, public)
        SELECT 'art_' || replace(gen_random_uuid()::text, '-', ''), v_run, a.role, a.file_name, a.content_type, a.format, a.size_bytes, a.sha256, a.public
          FROM run_artifacts a WHERE a.run_id = p_source;
      PERFORM silico_settle_compute(p_run->>'account_id', 'run:' || v_run, 0);
      UPDATE runs SET status = 'completed', settled_micros = 0, outputs = src.outputs, artifact_count = src.artifact_count, progress = 1,
             started_at = now(), finished_at = now()
       WHERE id = v_run;
      PERFORM silico_append_run_event(v_run, 'log',
        format('Answered from run %s: the same package, inputs, seed, compute profile and runtime. Nothing ran; nothing is charged.', p_source),
        jsonb_build_object('reused_from', p_source));
      PERFORM silico_append_run_event(v_run, 'state_changed', 'Run completed.', '{"status": "completed"}');
      RETURN QUERY SELECT * FROM runs WHERE id = v_run;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP FUNCTION IF EXISTS silico_reuse_run(jsonb, uuid, uuid, text[])');
  await k.raw('DROP INDEX IF EXISTS runs_reusable');
  await k.schema.alterTable('runs', (t) => {
    t.dropColumn('reused_from');
    t.dropColumn('runtime_sha256');
    t.dropColumn('inputs_sha256');
  });
}

import type { Knex } from 'knex';

/**
 * A run's artifact recorded in one round trip (issue 57): its row once by file name, the
 * run's count, and its `artifact_stored` event, where this took a transaction of four
 * statements and an event of its own. A retry's same file finds the earlier row and
 * changes nothing.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    CREATE FUNCTION silico_record_artifact(p_run uuid, p_id text, p_a jsonb, OUT artifact_id text, OUT created boolean)
    LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO run_artifacts (id, run_id, role, file_name, content_type, format, size_bytes, sha256, public)
        VALUES (p_id, p_run, p_a->>'role', p_a->>'file_name', p_a->>'content_type', p_a->>'format', (p_a->>'size_bytes')::bigint, p_a->>'sha256', (p_a->>'public')::boolean)
        ON CONFLICT (run_id, file_name) DO NOTHING
        RETURNING id INTO artifact_id;
      created := artifact_id IS NOT NULL;
      IF NOT created THEN
        SELECT id INTO artifact_id FROM run_artifacts WHERE run_id = p_run AND file_name = p_a->>'file_name';
        RETURN;
      END IF;
      UPDATE runs SET artifact_count = artifact_count + 1 WHERE id = p_run;
      PERFORM silico_append_run_event(p_run, 'artifact_stored', format('Stored %s (%s bytes).', p_a->>'file_name', p_a->>'size_bytes'),
        jsonb_build_object('artifact_id', artifact_id, 'sha256', p_a->>'sha256', 'file_name', p_a->>'file_name'));
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP FUNCTION IF EXISTS silico_record_artifact(uuid, text, jsonb)');
}

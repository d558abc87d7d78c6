import type { Knex } from 'knex';

/**
 * Where a file's bytes live. Uploads stay at the key they were streamed to (a server-side
 * copy to the content address would write every byte twice); copies of artifacts share
 * the artifact's content-addressed blob. The sha256 is recorded either way.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.alterTable('files', (t) => t.text('object_key'));
  await k.raw(`UPDATE files SET object_key = 'blobs/sha256/' || sha256 WHERE object_key IS NULL`);
  await k.raw('ALTER TABLE files ALTER COLUMN object_key SET NOT NULL');
}

export async function down(k: Knex): Promise<void> {
  await k.schema.alterTable('files', (t) => t.dropColumn('object_key'));
}

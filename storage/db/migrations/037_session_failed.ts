import type { Knex } from 'knex';

/**
 * A session can end `failed`: the hourly reconciliation fails an open session whose
 * workflow (`session-<id>`) no longer exists or has closed without completing it (a
 * session row left by a start whose cleanup failed, a workflow terminated by hand), with
 * `error` saying why. The record stays readable; no change can reach it any more.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`
    ALTER TABLE sessions DROP CONSTRAINT sessions_status_check;
    ALTER TABLE sessions ADD CONSTRAINT sessions_status_check CHECK (status IN ('open', 'completed', 'failed'));
    ALTER TABLE sessions ADD COLUMN error jsonb;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw(`
    ALTER TABLE sessions DROP CONSTRAINT sessions_status_check;
    UPDATE sessions SET status = 'open' WHERE status = 'failed';
    ALTER TABLE sessions ADD CONSTRAINT sessions_status_check CHECK (status IN ('open', 'completed'));
    ALTER TABLE sessions DROP COLUMN IF EXISTS error;
  `);
}

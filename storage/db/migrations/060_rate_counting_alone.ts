import type { Knex } from 'knex';

/**
 * Who counts a scope's rate limits (`storage/db/rateCounting.ts`). While one process is
 * the only one counting a scope, it holds the scope (`holder`, renewed by its ticks until
 * `holder_until`) and counts in its memory, writing the counts behind; as soon as another
 * process counts too, it writes what it counted and gives the scope up, and every process
 * counts in `rate_limits` with a statement per event-loop turn. A process counting is a
 * member, seen at each of its ticks. Both tables are unlogged: after a crash every process
 * joins again, and counts are worth nothing after one anyway.
 *
 * `silico_rate_tick` is a process's tick in one round trip, serialised on its scope's row:
 * the counts it made alone since its last tick, its membership (or its leaving), and what
 * it is to do until the next one:
 * - `kept`: it still holds the scope (renewed), its memory stays right;
 * - `taken`: it holds the scope now; whatever it remembers may be stale;
 * - `yield`: it holds the scope and another process counts too: it must stop counting in
 *   memory, then give the scope up (`release`), its last counts with it;
 * - `shared`: nobody holds the scope: count in `rate_limits`;
 * - `wait`: another process holds the scope (it will give it up at its next tick, or it is
 *   gone: a holder unseen for `p_grace_ms` past its lease is taken to be dead).
 *
 * A count in `rate_limits` by a process that is not the holder (`createCounters` with a
 * scope) takes the scope's row FOR KEY SHARE and counts only while nobody holds it, so a
 * statement sent late by a stalled process is refused, or lands before a new holder reads.
 */
export async function up(k: Knex): Promise<void> {
  await k.raw(`CREATE UNLOGGED TABLE rate_counting (scope text PRIMARY KEY, holder text, holder_until timestamptz)`);
  await k.raw(`CREATE UNLOGGED TABLE rate_counting_members (scope text NOT NULL, process text NOT NULL, seen timestamptz NOT NULL, PRIMARY KEY (scope, process))`);
  await k.raw(`
    CREATE FUNCTION silico_rate_tick(p_scope text, p_process text, p_lease_ms int, p_grace_ms int, p_action text,
                                     p_keys text[], p_points int[], p_expires bigint[], p_now bigint)
    RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
      h text;
      u timestamptz;
      t timestamptz;
      others int;
      lease interval := make_interval(secs => p_lease_ms / 1000.0);
      grace interval := make_interval(secs => p_grace_ms / 1000.0);
    BEGIN
      INSERT INTO rate_counting (scope) VALUES (p_scope) ON CONFLICT (scope) DO NOTHING;
      SELECT holder, holder_until INTO h, u FROM rate_counting WHERE scope = p_scope FOR UPDATE;
      t := clock_timestamp();
      -- Counts made alone are written only by a holder that still holds (or none does): a
      -- holder another took over from after its lease and grace lost them, as if it had died.
      IF cardinality(p_keys) > 0 AND (h IS NULL OR h = p_process) THEN
        INSERT INTO rate_limits AS r (key, points, expire)
          SELECT x.k, x.n, x.e FROM unnest(p_keys, p_points, p_expires) AS x(k, n, e) ORDER BY x.k
        ON CONFLICT (key) DO UPDATE SET
          points = CASE WHEN r.expire <= p_now THEN EXCLUDED.points ELSE r.points + EXCLUDED.points END,
          expire = CASE WHEN r.expire <= p_now THEN EXCLUDED.expire ELSE r.expire END;
      END IF;
      IF p_action = 'leave' THEN
        DELETE FROM rate_counting_members WHERE scope = p_scope AND process = p_process;
      ELSE
        INSERT INTO rate_counting_members (scope, process, seen) VALUES (p_scope, p_process, t)
          ON CONFLICT (scope, process) DO UPDATE SET seen = EXCLUDED.seen;
      END IF;
      IF p_action <> 'tick' THEN
        IF h IS NULL THEN
          RETURN 'shared';
        ELSIF h = p_process OR u + grace <= t THEN
          UPDATE rate_counting SET holder = NULL, holder_until = NULL WHERE scope = p_scope;
          RETURN 'shared';
        END IF;
        RETURN 'wait';
      END IF;
      DELETE FROM rate_counting_members WHERE scope = p_scope AND seen < t - interval '1 minute';
      SELECT count(*) INTO others FROM rate_counting_members WHERE scope = p_scope AND process <> p_process AND seen > t - lease;
      IF others = 0 AND (h IS NULL OR h = p_process OR u + grace <= t) THEN
        UPDATE rate_counting SET holder = p_process, holder_until = t + lease WHERE scope = p_scope;
        RETURN CASE WHEN h = p_process THEN 'kept' ELSE 'taken' END;
      ELSIF h = p_process THEN
        RETURN 'yield';
      ELSIF h IS NULL OR u + grace <= t THEN
        IF h IS NOT NULL THEN
          UPDATE rate_counting SET holder = NULL, holder_until = NULL WHERE scope = p_scope;
        END IF;
        RETURN 'shared';
      END IF;
      RETURN 'wait';
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP FUNCTION IF EXISTS silico_rate_tick(text, text, int, int, text, text[], int[], bigint[], bigint)');
  await k.raw('DROP TABLE IF EXISTS rate_counting_members');
  await k.raw('DROP TABLE IF EXISTS rate_counting');
}

import type { Db } from './knex.ts';
import type pg from 'pg';

/**
 * Fixed-window counters in the `rate_limits` table (unlogged: counts are worth nothing
 * after a crash), shared by every api process. A request draws from two counters at once
 * (its minute bucket and its key's daily count), so both are counted in ONE statement:
 * one round trip and one short row lock per counter on the request path. (We used
 * rate-limiter-flexible's Postgres store first; it counts one key per statement, which
 * doubled the statements on every request. Its window semantics are kept: a window
 * starts at its first request and restarts once expired.)
 *
 * The daily counter of a key is `daily:<key_id>:<YYYY-MM-DD>` (UTC day), which is how
 * GET /account reads usage back.
 */
export const DAILY_PREFIX = 'daily';

const DAY_MS = 86_400_000;
/** The UTC day last asked for, kept until it ends: every request asks, and toISOString is not free. */
let known = { day: '', from: 0, until: 0 };

/** When the UTC day of `at` began (ms since the epoch). */
function utcDayStart(at: number): number {
  return at - (((at % DAY_MS) + DAY_MS) % DAY_MS);
}

/** The UTC day (`YYYY-MM-DD`) of `at` (now by default). */
export function utcDay(at: number | Date = Date.now()): string {
  const t = typeof at === 'number' ? at : at.getTime();
  if (t < known.from || t >= known.until) {
    const from = utcDayStart(t);
    known = { day: new Date(from).toISOString().slice(0, 10), from, until: from + DAY_MS };
  }
  return known.day;
}

/** When the UTC day of `at` ends (ms since the epoch). */
export function utcDayEnd(at: number): number {
  return utcDayStart(at) + DAY_MS;
}

/** The daily counter's key for an API key on a UTC day. */
export function dailyCounterKey(keyId: string, day: string): string {
  return `${DAILY_PREFIX}:${keyId}:${day}`;
}

const UPSERT = `INSERT INTO rate_limits AS r (key, points, expire)
                 SELECT k, n, e FROM unnest($1::text[], $2::int[], $3::bigint[]) AS t(k, n, e)`;
const ON_CONFLICT = `ON CONFLICT (key) DO UPDATE SET
                 points = CASE WHEN r.expire <= $4 THEN EXCLUDED.points ELSE r.points + EXCLUDED.points END,
                 expire = CASE WHEN r.expire <= $4 THEN EXCLUDED.expire ELSE r.expire END
               RETURNING key, points, expire`;
const INCREMENT = { name: 'silico-rate-increment', text: `${UPSERT} ${ON_CONFLICT}` };
/**
 * Counting a scope some process may hold (storage/db/rateCounting.ts): the scope's row is
 * locked FOR KEY SHARE (a holder taking it waits for this count to commit), and nothing is
 * counted while a holder has it.
 */
const SCOPED_INCREMENT = {
  name: 'silico-rate-increment-scoped',
  text: `WITH scope AS (SELECT holder FROM rate_counting WHERE scope = $5 FOR KEY SHARE)
         ${UPSERT} WHERE NOT EXISTS (SELECT 1 FROM scope WHERE holder IS NOT NULL) ${ON_CONFLICT}`,
};

/** What a scoped count is refused with while a process holds the scope: ask again once it is given up. */
export const NOT_COUNTED = new Error('the scope is held by another process: not counted');

/** One counter to draw `points` from (1 by default: one request). */
export interface CounterRequest { key: string; windowMs: number; points?: number }
export interface CounterState { key: string; count: number; resetMs: number }

/** A process's counters (one set, shared by its doors). */
export interface Counters {
  increment(counters: CounterRequest[], now?: number): Promise<CounterState[]>;
  /** Counts at once where the counts are at hand (in this process's memory); otherwise counts nothing and answers undefined. */
  incrementNow?(counters: CounterRequest[], now?: number): CounterState[] | undefined;
}

interface Pending { counters: CounterRequest[]; now: number; resolve: (s: CounterState[]) => void; reject: (e: unknown) => void }

/**
 * Counts requests against counters, coalescing the increments of all requests that
 * arrive in the same event-loop turn into ONE statement (one round trip, one row lock
 * per distinct counter), then hands each request its own position in the count, as if
 * they had been counted one by one. Keys are locked in sorted order, so concurrent
 * statements from several api processes never deadlock.
 */
export function createCounters(pool: pg.Pool, opts: { scope?: string } = {}): Counters {
  let queue: Pending[] = [];
  const statement = opts.scope === undefined ? INCREMENT : SCOPED_INCREMENT;
  const extra = opts.scope === undefined ? [] : [opts.scope];
  const flush = async () => {
    const batch = queue;
    queue = [];
    const totals = new Map<string, { n: number; expire: number }>();
    for (const p of batch) {
      for (const c of p.counters) {
        const t = totals.get(c.key);
        if (t) t.n += c.points ?? 1;
        else totals.set(c.key, { n: c.points ?? 1, expire: p.now + c.windowMs });
      }
    }
    const keys = [...totals.keys()].sort();
    const now = batch[batch.length - 1]!.now;
    try {
      const { rows } = await pool.query<{ key: string; points: number; expire: string }>({
        ...statement,
        values: [keys, keys.map((k) => totals.get(k)!.n), keys.map((k) => totals.get(k)!.expire), now, ...extra],
      });
      if (rows.length === 0) throw NOT_COUNTED;
      // Each counter's requests take the last n positions of its new count, in arrival order.
      const next = new Map(rows.map((r) => [r.key, { at: Number(r.points) - totals.get(r.key)!.n, expire: Number(r.expire) }]));
      for (const p of batch) {
        p.resolve(p.counters.map((c) => {
          const slot = next.get(c.key)!;
          slot.at += c.points ?? 1;
          return { key: c.key, count: slot.at, resetMs: Math.max(0, slot.expire - p.now) };
        }));
      }
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  };
  return {
    increment(counters, now = Date.now()) {
      return new Promise((resolve, reject) => {
        if (queue.length === 0) setImmediate(() => void flush());
        queue.push({ counters, now, resolve, reject });
      });
    },
  };
}

/** A key's requests on a UTC day, as its daily counter holds them. */
export async function dailyRequests(pool: pg.Pool, keyId: string, day: string): Promise<number> {
  const { rows } = await pool.query<{ points: number }>({
    name: 'silico-daily-requests',
    text: 'SELECT coalesce(max(points), 0)::int AS points FROM rate_limits WHERE key = $1',
    values: [dailyCounterKey(keyId, day)],
  });
  return rows[0]!.points;
}

/** Forgets counters whose window has passed; returns how many. */
export async function purgeRateLimits(db: Db): Promise<number> {
  return db('rate_limits').where('expire', '<', Date.now()).delete();
}

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

/**
 * One counter to draw `points` from (1 by default: one request). A counter with a `limit`
 * may be leased ahead (see `createCounters`); one without is counted request by request.
 */
export interface CounterRequest { key: string; windowMs: number; points?: number; limit?: number }
export interface CounterState { key: string; count: number; resetMs: number }

/**
 * A process leases ahead at most this share of a counter's remaining allowance (as it
 * last counted it), which bounds what a replica holding unused points makes another
 * refuse early; near a limit (where the share rounds to nothing) every request is
 * counted in Postgres.
 */
export const LEASE_SHARE = 0.1;
/** A lease covers about this long of the process's recent demand for its counter. */
export const LEASE_MS = 100;

/** Counters whose lease a process remembers; past it, those whose window has passed are forgotten. */
const LEASES_KEPT = 10_000;

/**
 * Positions `next + 1 .. end` of a counter's window are this process's to hand out; it
 * was granted at `grantedAt`, when the counter stood at `count`, and `taken` have gone since.
 */
interface Lease { next: number; end: number; expire: number; grantedAt: number; taken: number; count: number }

const covers = (l: Lease | undefined, points: number, now: number): l is Lease => l !== undefined && l.expire > now && l.end - l.next >= points;

interface Pending { counters: CounterRequest[]; now: number; resolve: (s: CounterState[]) => void; reject: (e: unknown) => void }

export interface Counters {
  /** The counters' states if this process's leases cover them all (and draws them), else undefined, drawing nothing. */
  take(counters: CounterRequest[], now?: number): CounterState[] | undefined;
  /** Draws from the counters: from leases where they cover, else in Postgres. */
  increment(counters: CounterRequest[], now?: number): Promise<CounterState[]>;
}

/**
 * Counts requests against counters shared by every process through Postgres.
 *
 * Counting in Postgres on every request cost a statement per event-loop turn, the largest
 * part of a read's overhead. So a busy counter is leased: when a process counts it in
 * Postgres it also takes the positions its recent demand would use over the next
 * `LEASE_MS` (at most `LEASE_SHARE` of what remained when this process last counted it),
 * and hands them to its next requests without a statement. Leased positions are counted
 * in Postgres when taken, so the counters never admit more than their limit across
 * processes, and no position is handed out twice; what a lease costs is that its unused
 * positions count as used (a replica may refuse early by the others' unused leases; a
 * dead process's lease is spent; a remainder too small for a batch's points is left).
 * A counter asked fewer than ten times a second (its demand over `LEASE_MS` rounds to
 * nothing), or with fewer than about ten positions left, leases nothing and is counted
 * exactly as it comes.
 *
 * What goes to Postgres is coalesced: all requests of one event-loop turn make ONE
 * statement (one round trip, one row lock per distinct counter), each request getting its
 * own position, as if counted one by one. Keys are locked in sorted order, so concurrent
 * statements from several processes never deadlock.
 */
export function createCounters(pool: pg.Pool): Counters {
  const leases = new Map<string, Lease>();
  const fromLease = (c: CounterRequest, now: number): CounterState | undefined => {
    const l = leases.get(c.key);
    const points = c.points ?? 1;
    if (!covers(l, points, now)) return undefined;
    l.next += points;
    l.taken += points;
    return { key: c.key, count: l.next, resetMs: l.expire - now };
  };
  /** How many positions to lease beyond the `n` asked for: the counter's recent demand here, capped. */
  const leaseSize = (key: string, limit: number | undefined, n: number, now: number): number => {
    const l = leases.get(key);
    if (limit === undefined || !l) return 0;
    const cap = Math.floor(LEASE_SHARE * (limit - (l.expire > now ? l.count : 0) - n));
    const demand = Math.floor(((l.taken + n) * LEASE_MS) / Math.max(1, now - l.grantedAt));
    return Math.max(0, Math.min(cap, demand));
  };
  /** Forgets the counters whose window has passed, then the oldest grants, down to 90% of the bound (so this runs rarely). */
  const forgetPassed = (now: number) => {
    for (const [key, l] of leases) if (l.expire <= now) leases.delete(key);
    for (const key of leases.keys()) {
      if (leases.size <= LEASES_KEPT * 0.9) break;
      leases.delete(key);
    }
  };

  /** Counters whose lease is being granted: their next requests wait for it rather than count again. */
  const granting = new Map<string, Promise<void>>();
  let queue: Pending[] = [];
  const flush = async () => {
    const batch = queue;
    queue = [];
    const totals = new Map<string, { n: number; extra: number; expire: number; limit?: number }>();
    for (const p of batch) {
      for (const c of p.counters) {
        const t = totals.get(c.key);
        if (t) t.n += c.points ?? 1;
        else totals.set(c.key, { n: c.points ?? 1, extra: 0, expire: p.now + c.windowMs, ...(c.limit === undefined ? {} : { limit: c.limit }) });
      }
    }
    const now = batch[batch.length - 1]!.now;
    for (const [key, t] of totals) t.extra = leaseSize(key, t.limit, t.n, now);
    const keys = [...totals.keys()].sort();
    let granted = () => {};
    const grant = new Promise<void>((ok) => { granted = ok; });
    for (const [key, t] of totals) if (t.extra > 0) granting.set(key, grant);
    try {
      const { rows } = await pool.query<{ key: string; points: number; expire: string }>({
        name: 'silico-rate-increment',
        text: `INSERT INTO rate_limits AS r (key, points, expire)
                 SELECT k, n, e FROM unnest($1::text[], $2::int[], $3::bigint[]) AS t(k, n, e)
               ON CONFLICT (key) DO UPDATE SET
                 points = CASE WHEN r.expire <= $4 THEN EXCLUDED.points ELSE r.points + EXCLUDED.points END,
                 expire = CASE WHEN r.expire <= $4 THEN EXCLUDED.expire ELSE r.expire END
               RETURNING key, points, expire`,
        values: [keys, keys.map((k) => totals.get(k)!.n + totals.get(k)!.extra), keys.map((k) => totals.get(k)!.expire), now],
      });
      // Each counter's requests take the first n positions of what was counted, in arrival
      // order; the rest is its lease.
      const next = new Map<string, { at: number; expire: number }>();
      if (leases.size > LEASES_KEPT) forgetPassed(now);
      for (const r of rows) {
        const t = totals.get(r.key)!;
        const points = Number(r.points);
        const expire = Number(r.expire);
        next.set(r.key, { at: points - t.n - t.extra, expire });
        if (t.limit === undefined) continue;
        // A statement that leased nothing leaves a lease still holding positions as it is
        // (another statement of this key may have granted it meanwhile).
        const held = leases.get(r.key);
        if (t.extra === 0 && covers(held, 1, now)) continue;
        // Re-inserted, so the map's order is the order of last grants.
        leases.delete(r.key);
        leases.set(r.key, { next: points - t.extra, end: points, expire, grantedAt: now, taken: 0, count: points });
      }
      for (const p of batch) {
        p.resolve(p.counters.map((c) => {
          const slot = next.get(c.key)!;
          slot.at += c.points ?? 1;
          return { key: c.key, count: slot.at, resetMs: Math.max(0, slot.expire - p.now) };
        }));
      }
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      for (const [key, g] of granting) if (g === grant) granting.delete(key);
      granted();
    }
  };
  const counted = (counters: CounterRequest[], now: number) => new Promise<CounterState[]>((resolve, reject) => {
    if (queue.length === 0) setImmediate(() => void flush());
    queue.push({ counters, now, resolve, reject });
  });
  return {
    take(counters, now = Date.now()) {
      for (const c of counters) if (!covers(leases.get(c.key), c.points ?? 1, now)) return undefined;
      return counters.map((c) => fromLease(c, now)!);
    },
    async increment(counters, now = Date.now()) {
      const local = counters.map((c) => fromLease(c, now));
      const waits = counters.flatMap((c, i) => (local[i] ? [] : granting.get(c.key) ?? []));
      if (waits.length > 0) {
        await Promise.all(waits);
        // A lease is drawn at the time it is drawn: its window may have passed meanwhile.
        const later = Date.now();
        for (let i = 0; i < counters.length; i++) local[i] ??= fromLease(counters[i]!, Math.max(now, later));
      }
      const rest = counters.filter((_, i) => !local[i]);
      if (rest.length === 0) return local as CounterState[];
      const states = await counted(rest, now);
      let i = 0;
      return local.map((s) => s ?? states[i++]!);
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

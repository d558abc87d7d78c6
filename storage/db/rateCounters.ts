import type pg from 'pg';

/**
 * One counter to draw `points` from (1 by default: one request). A counter with a `limit`
 * may be leased ahead (see `createCounters`); one without is counted request by request.
 */
export interface CounterRequest { key: string; windowMs: number; points?: number; limit?: number }
export interface CounterState { key: string; count: number; resetMs: number }

/** A process's counters (one set, shared by its doors). */
export interface Counters {
  /** The counters' states if this process's leases cover them all (and draws them), else undefined, drawing nothing. */
  take(counters: CounterRequest[], now?: number): CounterState[] | undefined;
  /** Draws from the counters: from leases where they cover, else in Postgres. */
  increment(counters: CounterRequest[], now?: number): Promise<CounterState[]>;
  /** Gives back every lease this process holds (before its pool ends). */
  close(): Promise<void>;
}

/**
 * A process leases ahead at most this share of a counter's remaining allowance (as it
 * last counted it); near a limit, where the share rounds to nothing, every request is
 * counted in Postgres.
 */
export const LEASE_SHARE = 0.1;
/** A lease covers about this long of the process's recent demand, and lasts this long. */
export const LEASE_MS = 100;
/**
 * How long past its end a lease is still waited for, in case its process is slow to give
 * it back (a loaded machine's event loop can lag by hundreds of milliseconds: 200 ms was
 * too short in a clean-clone CI); a process that died holding one is waited for no longer
 * than this.
 */
const LEASE_GRACE_MS = 2_000;
/** How often a request past its limit looks again while a lease it waits for is overdue. */
const RECHECK_MS = 20;
/** How many times at most a request past its limit looks again before it is refused anyway (past the grace, in any case). */
const WAITS = 200;

/** Counters whose lease a process remembers; past it, those whose window has passed are forgotten. */
const LEASES_KEPT = 10_000;

/**
 * Positions `next + 1 .. end` of a counter's window (the one ending at `expire`) are this
 * process's to hand out until `until`. It was granted at `grantedAt`, when the counter
 * stood at `count`, and `taken` have gone since. `held` while it is counted among the
 * counter's leases in Postgres (a grant of nothing never is).
 */
interface Lease { next: number; end: number; expire: number; grantedAt: number; until: number; taken: number; count: number; held: boolean }

const covers = (l: Lease | undefined, c: CounterRequest, now: number): l is Lease => {
  const points = c.points ?? 1;
  return l !== undefined && l.held && l.until > now && l.expire > now && l.end - l.next >= points && (c.limit === undefined || l.next + points <= c.limit);
};

/** A request's draw from one counter in Postgres; `waitUntil` when it is past its limit while other processes hold leases. */
interface Drawn extends CounterState { expire: number; waitUntil?: number }
interface Pending { counters: CounterRequest[]; now: number; resolve: (s: Drawn[]) => void; reject: (e: unknown) => void }
interface Row { key: string; points: number; expire: string; leases: number; lease_until: string }

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, Math.max(0, ms)));

/**
 * Counts requests against counters shared by every process through Postgres.
 *
 * What goes to Postgres is coalesced: all requests of one event-loop turn make ONE
 * statement (one round trip, one row lock per distinct counter), each request getting its
 * own position, as if counted one by one. Keys are locked in sorted order, so concurrent
 * statements from several processes never deadlock.
 *
 * A busy counter is leased besides: when a process counts it in Postgres it also draws the
 * positions its recent demand would use over the next `LEASE_MS` (at most `LEASE_SHARE`
 * of what remained when it last counted it), and hands them to its next requests with no
 * statement. Leased positions are counted when drawn, so no process admits beyond the
 * limit. A lease lasts `LEASE_MS`: then, or as soon as this process counts the counter in
 * Postgres again, its unused positions are given back. The counter's row counts its
 * outstanding leases; a request that finds it past its limit while another process holds
 * one gives its own points back and waits for that lease to end, then counts again. So a
 * limit admits exactly its number across processes, and a request is refused only once no
 * other process holds positions it might not use. (A process that dies holding a lease
 * loses its unused positions until the window ends; it is waited for `LEASE_GRACE_MS` at
 * most.) A counter asked fewer than ten times a second, or with fewer than about ten
 * positions left, leases nothing and is counted exactly as it comes.
 */
export function createCounters(pool: pg.Pool): Counters {
  const leases = new Map<string, Lease>();
  /** Counters whose lease is being granted or given back: their next requests wait for it rather than count around it. */
  const busy = new Map<string, Promise<void>>();

  const fromLease = (c: CounterRequest, now: number): CounterState | undefined => {
    const l = leases.get(c.key);
    if (!covers(l, c, now)) return undefined;
    l.next += c.points ?? 1;
    l.taken += c.points ?? 1;
    // A lease used up is given back at once, so no other process waits for it.
    if (l.next === l.end) endAt(c.key, l, 0);
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
    for (const [key, l] of leases) if (l.expire <= now && !l.held) leases.delete(key);
    for (const [key, l] of leases) {
      if (leases.size <= LEASES_KEPT * 0.9) break;
      if (!l.held) leases.delete(key);
    }
  };

  /**
   * Gives back the unused positions of the leases held on `keys` (in one statement), so
   * they are no longer counted as used nor as outstanding. A window that has restarted
   * since is left alone: its count began again without them. If the statement fails, the
   * leases are held again and their end is tried again later.
   */
  /**
   * Takes points (and leases) back from counters, in one statement: a lease's unused
   * positions, or a draw that waits for other processes' leases. Only from the window they
   * were drawn in: one that has restarted since began its count again without them.
   */
  const takeBack = async (rows: { key: string; points: number; leases: number; expire: number }[]): Promise<void> => {
    await pool.query({
      name: 'silico-rate-take-back',
      text: `UPDATE rate_limits AS r SET points = r.points - t.n, leases = r.leases - t.l
               FROM unnest($1::text[], $2::int[], $3::int[], $4::bigint[]) AS t(k, n, l, e)
              WHERE r.key = t.k AND r.expire = t.e`,
      values: [rows.map((x) => x.key), rows.map((x) => x.points), rows.map((x) => x.leases), rows.map((x) => x.expire)],
    });
  };
  const giveBack = (keys: string[]): Promise<void> => release(keys.flatMap((key) => {
    const l = leases.get(key);
    return l?.held ? [{ key, l }] : [];
  }));
  const release = async (held: { key: string; l: Lease }[]): Promise<void> => {
    const ending = held.map(({ key, l }) => {
      l.held = false;
      const unused = l.end - l.next;
      l.end = l.next;
      return { key, l, unused };
    });
    if (ending.length === 0) return;
    try {
      await takeBack(ending.map(({ key, l, unused }) => ({ key, points: unused, leases: 1, expire: l.expire })));
    } catch (err) {
      for (const { key, l, unused } of ending) {
        l.held = true;
        l.end += unused;
        endAt(key, l, LEASE_MS);
      }
      throw err;
    }
  };
  /** Runs `work` as the one thing under way on those counters; their next requests wait for it. */
  const exclusively = <T>(keys: string[], work: () => Promise<T>): Promise<T> => {
    const done = work();
    const settled = done.then(() => {}, () => {});
    for (const key of keys) busy.set(key, settled);
    void settled.then(() => {
      for (const key of keys) if (busy.get(key) === settled) busy.delete(key);
    });
    return done;
  };
  /**
   * A lease's end, `ms` from now: its unused positions given back, unless a statement has
   * already done so (a failure is tried again by `release`).
   */
  function endAt(key: string, l: Lease, ms: number) {
    setTimeout(() => {
      if (leases.get(key) === l && l.held) void exclusively([key], () => release([{ key, l }])).catch(() => {});
    }, ms).unref();
  }

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
    const keys = [...totals.keys()].sort();
    let at = now;
    try {
      const rows = await exclusively(keys, async () => {
        // This process's leases on these counters end here: the counter's row then counts
        // only other processes' leases and the one this statement grants.
        await giveBack(keys);
        // A lease's life is timed from when it is granted: the batch's `now` may be older.
        at = Math.max(now, Date.now());
        for (const [key, t] of totals) t.extra = leaseSize(key, t.limit, t.n, at);
        const { rows } = await pool.query<Row>({
          name: 'silico-rate-increment',
          text: `INSERT INTO rate_limits AS r (key, points, expire, leases, lease_until)
                   SELECT k, n, e, g, u FROM unnest($1::text[], $2::int[], $3::bigint[], $4::int[], $5::bigint[]) AS t(k, n, e, g, u)
                 ON CONFLICT (key) DO UPDATE SET
                   points = CASE WHEN r.expire <= $6 THEN EXCLUDED.points ELSE r.points + EXCLUDED.points END,
                   leases = CASE WHEN r.expire <= $6 THEN EXCLUDED.leases ELSE r.leases + EXCLUDED.leases END,
                   lease_until = CASE WHEN r.expire <= $6 THEN EXCLUDED.lease_until ELSE greatest(r.lease_until, EXCLUDED.lease_until) END,
                   expire = CASE WHEN r.expire <= $6 THEN EXCLUDED.expire ELSE r.expire END
                 RETURNING key, points, expire, leases, lease_until`,
          values: [
            keys, keys.map((k) => totals.get(k)!.n + totals.get(k)!.extra), keys.map((k) => totals.get(k)!.expire),
            keys.map((k) => (totals.get(k)!.extra > 0 ? 1 : 0)), keys.map((k) => (totals.get(k)!.extra > 0 ? at + LEASE_MS : 0)), now,
          ],
        });
        return rows;
      });
      // Each counter's requests take the first n positions of what was counted, in arrival
      // order; the rest is its lease.
      const next = new Map<string, { at: number; expire: number; othersUntil: number }>();
      if (leases.size > LEASES_KEPT) forgetPassed(now);
      for (const r of rows) {
        const t = totals.get(r.key)!;
        const points = Number(r.points);
        const expire = Number(r.expire);
        const others = Number(r.leases) - (t.extra > 0 ? 1 : 0);
        next.set(r.key, { at: points - t.n - t.extra, expire, othersUntil: others > 0 ? Number(r.lease_until) : 0 });
        if (t.limit === undefined) continue;
        // A lease held still (granted by a statement that ran beside this one) is kept, or
        // given back when this statement granted one too: never dropped while held.
        const before = leases.get(r.key);
        if (before?.held) {
          if (t.extra === 0) continue;
          void exclusively([r.key], () => release([{ key: r.key, l: before }])).catch(() => {});
        }
        // Re-inserted, so the map's order is the order of last grants.
        const lease: Lease = { next: points - t.extra, end: points, expire, grantedAt: at, until: at + LEASE_MS, taken: 0, count: points, held: t.extra > 0 };
        leases.delete(r.key);
        leases.set(r.key, lease);
        if (lease.held) endAt(r.key, lease, LEASE_MS);
      }
      for (const p of batch) {
        p.resolve(p.counters.map((c) => {
          const slot = next.get(c.key)!;
          slot.at += c.points ?? 1;
          // Past its limit while another process's lease may still give positions back:
          // looked at again once that lease has ended (and its process has given it back).
          const past = c.limit !== undefined && slot.at > c.limit && slot.othersUntil + LEASE_GRACE_MS > p.now;
          const waitUntil = slot.othersUntil > p.now ? slot.othersUntil + 2 : p.now + RECHECK_MS;
          return { key: c.key, count: slot.at, resetMs: Math.max(0, slot.expire - p.now), expire: slot.expire, ...(past ? { waitUntil } : {}) };
        }));
      }
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  };
  const counted = (counters: CounterRequest[], now: number) => new Promise<Drawn[]>((resolve, reject) => {
    if (queue.length === 0) setImmediate(() => void flush());
    queue.push({ counters, now, resolve, reject });
  });

  const busyOf = (counters: CounterRequest[], states: (CounterState | undefined)[]) => counters.flatMap((c, i) => (states[i] ? [] : busy.get(c.key) ?? []));

  return {
    async close() {
      await Promise.all([...busy.values()]);
      await giveBack([...leases.keys()]);
    },
    take(counters, now = Date.now()) {
      for (const c of counters) if (!covers(leases.get(c.key), c, now)) return undefined;
      return counters.map((c) => fromLease(c, now)!);
    },
    async increment(counters, now = Date.now()) {
      const states: (CounterState | undefined)[] = counters.map((c) => fromLease(c, now));
      for (let waits = 0; ; waits++) {
        // A counter whose lease is being granted or given back: wait for it (and for any
        // begun meanwhile on another of them), then draw from it if it covers. So one
        // process never counts a counter in two statements at once.
        for (let pending = busyOf(counters, states); pending.length > 0; pending = busyOf(counters, states)) {
          await Promise.all(pending);
          // A lease is drawn at the time it is drawn: its window may have passed meanwhile.
          const later = Math.max(now, Date.now());
          for (let i = 0; i < counters.length; i++) states[i] ??= fromLease(counters[i]!, later);
        }
        const rest = counters.flatMap((c, i) => (states[i] ? [] : [i]));
        if (rest.length === 0) return states as CounterState[];
        const at = waits === 0 ? now : Math.max(now, Date.now());
        const drawn = await counted(rest.map((i) => counters[i]!), at);
        const waiting = rest.flatMap((i, j) => (drawn[j]!.waitUntil !== undefined && waits < WAITS ? [{ i, c: counters[i]!, d: drawn[j]! }] : []));
        rest.forEach((i, j) => {
          if (!waiting.some((w) => w.i === i)) states[i] = { key: drawn[j]!.key, count: drawn[j]!.count, resetMs: drawn[j]!.resetMs };
        });
        if (waiting.length === 0) return states as CounterState[];
        await takeBack(waiting.map(({ c, d }) => ({ key: c.key, points: c.points ?? 1, leases: 0, expire: d.expire })));
        // Bounded whatever another host's clock says.
        await sleep(Math.min(LEASE_MS + LEASE_GRACE_MS, Math.max(...waiting.map((w) => w.d.waitUntil!)) - Date.now()));
      }
    },
  };
}

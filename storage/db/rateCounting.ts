import { randomUUID } from 'node:crypto';
import { setTimeout as wait } from 'node:timers/promises';
import pg from 'pg';
import { createCounters, NOT_COUNTED, type CounterRequest, type CounterState, type Counters } from './rateLimits.ts';

/** What a process does with a count now: in its memory, in `rate_limits`, or nothing until its next tick says. */
export type CountingRole = 'alone' | 'shared' | 'none';

export interface ScopeCounters extends Counters {
  /** How this process counts now (for tests and metrics). */
  role(): CountingRole;
  /** Writes what it counted alone and leaves the scope; a count after this is refused. */
  close(): Promise<void>;
}

export interface ScopeCountingOptions {
  /** The scope held: every process counting the same keys must name the same one. */
  scope: string;
  /** How long a tick's answer holds (ms); a holder unseen for this long loses its lease. */
  leaseMs?: number;
  /** Past a lease, how long a holder may still be giving up before it is taken to be gone. */
  graceMs?: number;
  /** Between ticks (ms), and while waiting for a decision. */
  tickMs?: number;
  waitTickMs?: number;
  /** With no count for this long, the process leaves the scope (another may then count alone). */
  idleMs?: number;
  /**
   * Where its ticks go: by default a connection of its own, made like `pool`'s, whose
   * statements time out before the grace ends, so a tick held up (by a pool busy with
   * requests, or a slow Postgres) is rolled back rather than written late.
   */
  ticks?: pg.Pool;
}

/** Its answer is trusted until this long before its lease ends: a tick's time on the wire is on the safe side. */
const MARGIN_MS = 250;
/** A key not counted for this long is forgotten from memory (read again when next counted). */
const FORGET_MS = 60_000;
/** How often a process that is closing tries to write its last counts and leave. */
const LEAVE_TRIES = 3;
const CLOSED = new Error('the rate counters are closed');

interface Slot { count: number; expire: number; used: number }
interface Delta { n: number; expire: number }
type Answer = 'kept' | 'taken' | 'yield' | 'shared' | 'wait';

/**
 * Counters that are exact across processes and cost nothing per request while one process
 * counts alone (migration 060 says how a scope is held and handed over). Alone, a process
 * counts in its memory, and each tick (every 100 ms) writes what it counted since the last
 * one; with others, every process counts with `createCounters`' statement per turn. A
 * process starts counting alone only when no other is a member and no holder is left, and
 * the holder stops counting in memory before it writes its last counts and gives the scope
 * up; so at any moment the counts are either in one process's memory or in Postgres.
 *
 * A holder that dies loses at most what it counted since its last tick (a limit forgives
 * that much, as a crash forgives an unlogged table's counts), and whoever counts next
 * waits for its lease and a grace to pass: a holder merely slow gives up with its counts
 * in that time, and what it writes later is dropped (it no longer holds). Postgres fences
 * the counts made there: one sent late, by a process stalled past its membership, is
 * refused while someone holds the scope, or lands before a new holder reads.
 */
export function createScopeCounters(pool: pg.Pool, opts: ScopeCountingOptions): ScopeCounters {
  const { scope, leaseMs = 1000, graceMs = 2000, tickMs = 100, waitTickMs = 20, idleMs = 5000 } = opts;
  const shared = createCounters(pool, { scope });
  const ownTicks = !opts.ticks;
  const ticks = opts.ticks ?? new pg.Pool({ ...pool.options, max: 1, statement_timeout: Math.max(100, Math.floor(graceMs / 2)) });
  if (ownTicks) ticks.on('error', () => undefined);
  const me = randomUUID();
  let role: CountingRole = 'none';
  /** performance.now() until which `role` holds. */
  let until = 0;
  let lastUse = 0;
  let looping: Promise<void> | undefined;
  let closed = false;
  /** What memory holds, and what it counted since the last tick wrote. */
  let slots = new Map<string, Slot>();
  let deltas = new Map<string, Delta>();
  /** Keys being read into memory (queued, or on their way), each with what its waiters wait on. */
  const loads = new Map<string, Settling>();
  let loadQueue: string[] = [];
  let inFlight = 0;
  const drained: Array<() => void> = [];
  let decided = settling();

  /** Memory may be stale from here on: reads queued or on their way fill nothing, their waiters ask again. */
  const forget = () => {
    slots = new Map();
    for (const key of loadQueue) loads.get(key)?.resolve();
    loads.clear();
    loadQueue = [];
  };
  const valid = (r: CountingRole) => role === r && performance.now() < until;

  /** Puts back counts a failed tick did not write (a window since restarted keeps its own). */
  const restore = (unwritten: Map<string, Delta>) => {
    for (const [key, d] of unwritten) {
      const now = deltas.get(key);
      if (!now) deltas.set(key, d);
      else if (now.expire === d.expire) now.n += d.n;
    }
  };

  const sharedDrained = () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((r) => drained.push(r)));

  async function tick(action: 'tick' | 'release' | 'leave'): Promise<Answer | undefined> {
    const sent = performance.now();
    const writing = deltas;
    deltas = new Map();
    const keys = [...writing.keys()];
    let answer: Answer;
    try {
      const { rows } = await ticks.query<{ role: Answer }>({
        name: 'silico-rate-tick',
        text: 'SELECT silico_rate_tick($1, $2, $3, $4, $5, $6, $7, $8, $9) AS role',
        values: [scope, me, leaseMs, graceMs, action, keys, keys.map((k) => writing.get(k)!.n), keys.map((k) => writing.get(k)!.expire), Date.now()],
      });
      answer = rows[0]!.role;
    } catch (err) {
      // Whether it was written is not known; written twice, a limit is only stricter.
      restore(writing);
      if (role !== 'alone') forget();
      if (performance.now() >= until) role = 'none';
      if (role === 'none') settle(err);
      return undefined;
    }
    if (answer === 'kept') {
      role = 'alone';
      until = sent + leaseMs - MARGIN_MS;
    } else if (answer === 'taken') {
      // Its own counts still on their way to Postgres land before it reads any back.
      role = 'none';
      forget();
      await sharedDrained();
      role = 'alone';
      until = sent + leaseMs - MARGIN_MS;
    } else if (answer === 'yield') {
      role = 'none';
      forget();
      return tick('release');
    } else if (answer === 'shared') {
      if (role !== 'shared') forget();
      role = action === 'leave' ? 'none' : 'shared';
      // Postgres fences counts made there, so this holds until a tick says otherwise.
      until = Infinity;
    } else {
      role = 'none';
      forget();
    }
    settle();
    return answer;
  }

  function settle(err?: unknown) {
    const d = decided;
    decided = settling();
    if (err === undefined) d.resolve();
    else d.reject(err);
  }

  function prune() {
    const now = Date.now();
    for (const [key, s] of slots) if (!deltas.has(key) && (s.expire <= now || now - s.used > FORGET_MS)) slots.delete(key);
  }

  async function loop() {
    while (!closed) {
      if (Date.now() - lastUse > idleMs) {
        role = 'none';
        forget();
        await sharedDrained();
        const left = await tick('leave');
        if (left === undefined) await wait(tickMs, undefined, { ref: false });
        else if (Date.now() - lastUse > idleMs) return;
        continue;
      }
      const answer = await tick('tick');
      if (answer === 'kept' || answer === 'taken') prune();
      await wait(role === 'none' ? waitTickMs : tickMs, undefined, { ref: false });
    }
  }

  const ensureLoop = () => {
    if (looping || closed) return;
    looping = loop().finally(() => {
      looping = undefined;
      // A count that came as the loop was leaving for idleness starts it again.
      if (Date.now() - lastUse <= idleMs) ensureLoop();
    });
  };

  function countHere(counters: CounterRequest[], now: number): CounterState[] {
    const out: CounterState[] = [];
    for (const c of counters) {
      const points = c.points ?? 1;
      const s = slots.get(c.key)!;
      if (s.expire <= now) {
        s.count = points;
        s.expire = now + c.windowMs;
        deltas.set(c.key, { n: points, expire: s.expire });
      } else {
        s.count += points;
        const d = deltas.get(c.key);
        if (d && d.expire === s.expire) d.n += points;
        else deltas.set(c.key, { n: points, expire: s.expire });
      }
      s.used = now;
      out.push({ key: c.key, count: s.count, resetMs: Math.max(0, s.expire - now) });
    }
    return out;
  }

  /** Reads keys' counts into memory, the keys of one event-loop turn in one statement. */
  function load(keys: string[]): Promise<unknown> {
    for (const key of keys) {
      if (loads.has(key)) continue;
      if (loadQueue.length === 0) setImmediate(readQueued);
      loadQueue.push(key);
      loads.set(key, settling());
    }
    return Promise.all(keys.map((k) => loads.get(k)!.promise));
  }
  async function readQueued() {
    const keys = loadQueue;
    loadQueue = [];
    if (keys.length === 0) return;
    const into = slots;
    const waiting = keys.map((k) => [k, loads.get(k)!] as const);
    try {
      const { rows } = await pool.query<{ key: string; points: number; expire: string }>({
        name: 'silico-rate-read',
        text: 'SELECT key, points, expire FROM rate_limits WHERE key = ANY($1::text[])',
        values: [keys],
      });
      const found = new Map(rows.map((r) => [r.key, r]));
      const now = Date.now();
      // Memory forgotten meanwhile (the scope changed hands) is not filled from a stale read.
      if (into === slots) {
        for (const k of keys) {
          const r = found.get(k);
          if (!slots.has(k)) slots.set(k, { count: r ? Number(r.points) : 0, expire: r ? Number(r.expire) : 0, used: now });
        }
      }
      for (const [k, d] of waiting) {
        if (loads.get(k) === d) loads.delete(k);
        d.resolve();
      }
    } catch (err) {
      for (const [k, d] of waiting) {
        if (loads.get(k) === d) loads.delete(k);
        d.reject(err);
      }
    }
  }

  function count(counters: CounterRequest[], now: number): Promise<CounterState[]> {
    if (valid('alone')) {
      const missing = counters.filter((c) => !slots.has(c.key)).map((c) => c.key);
      if (missing.length === 0) return Promise.resolve(countHere(counters, now));
      return load(missing).then(() => count(counters, now));
    }
    if (valid('shared')) {
      inFlight++;
      return shared.increment(counters, now).finally(() => {
        if (--inFlight === 0) for (const r of drained.splice(0)) r();
      }).catch((err: unknown) => {
        if (err !== NOT_COUNTED) throw err;
        // Someone holds the scope now: count once the ticks say how.
        if (role === 'shared') role = 'none';
        return count(counters, now);
      });
    }
    if (closed) return Promise.reject(CLOSED);
    // A count waiting keeps the loop from leaving for idleness.
    lastUse = Date.now();
    ensureLoop();
    return decided.promise.then(() => count(counters, now));
  }

  return {
    increment(counters, now = Date.now()) {
      if (closed) return Promise.reject(CLOSED);
      lastUse = Date.now();
      ensureLoop();
      return count(counters, now);
    },
    incrementNow(counters, now = Date.now()) {
      if (!valid('alone')) return undefined;
      for (const c of counters) if (!slots.has(c.key)) return undefined;
      lastUse = Date.now();
      return countHere(counters, now);
    },
    role: () => (performance.now() < until ? role : 'none'),
    async close() {
      if (closed) return;
      closed = true;
      await looping;
      role = 'none';
      forget();
      await sharedDrained();
      for (let i = 0; i < LEAVE_TRIES && (await tick('leave')) === undefined; i++) await wait(waitTickMs, undefined, { ref: false });
      settle(CLOSED);
      if (ownTicks) await ticks.end().catch(() => undefined);
    },
  };
}

interface Settling { promise: Promise<void>; resolve(): void; reject(err: unknown): void }

/** A promise to settle later, whose failure nobody waiting is not an unhandled rejection. */
function settling(): Settling {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => { resolve = res; reject = rej; });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

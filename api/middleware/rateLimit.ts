import type { Middleware, ParameterizedContext } from 'koa';
import { Stream, type Readable } from 'node:stream';
import { dailyCounterKey, utcDay, utcDayEnd, type CounterRequest, type CounterState, type Counters } from '../../storage/db/rateLimits.ts';
import type { Config } from '../../kernel/config.ts';
import { errors } from '../errors.ts';

interface View { name: string; limit: number; count: number; resetSeconds: number }
/** The bucket a response shows (the one nearest its limit) and the one spent, if any. */
interface Verdict { shown: View; spent: View | undefined }
type Ctx = ParameterizedContext;

/** Within this share of a limit, a key's reads are counted before they run again. */
const NEAR_SHARE = 0.1;
/** Keys remembered near their limit in one process (the oldest forgotten first). */
const NEAR_KEYS = 10_000;
const DAILY_WINDOW_MS = 2 * 86_400_000;

// What runs on every request is kept out of its closure: these are made once.
function judge(views: View[]): Verdict {
  let spent: View | undefined;
  // A spent daily allowance (the last view) outranks a spent minute.
  for (let i = views.length - 1; i >= 0 && !spent; i--) if (views[i]!.count > views[i]!.limit) spent = views[i];
  let shown = views[0]!;
  for (const v of views) if ((v.limit - v.count) / v.limit < (shown.limit - shown.count) / shown.limit) shown = v;
  return { shown: spent ?? shown, spent };
}

/** Sets the shown bucket's headers; throws the 429 when one is spent. */
function announce(ctx: Ctx, { shown, spent }: Verdict): void {
  ctx.set('RateLimit-Limit', String(shown.limit));
  ctx.set('RateLimit-Remaining', String(Math.max(0, shown.limit - shown.count)));
  ctx.set('RateLimit-Reset', String(shown.resetSeconds));
  if (spent) throw errors.rateLimited(Math.max(1, spent.resetSeconds), spent.name);
}

const unavailable = (): never => {
  throw errors.serviceUnavailable('postgres');
};
const dailyCount = (views: View[]): number => views[1]!.count;
const value = <T>(v: T) => ({ v });
const failure = (err: unknown) => ({ err });
const nothing = () => null;

/**
 * Per-key limits kept in Postgres, so they hold across every api process: a per-minute
 * bucket (tighter for run creation) and a daily fair-use count per UTC day, counted in
 * one statement shared by the requests of the same event-loop turn (one set of counters
 * per process, shared by /v1 and /mcp). Requests without a
 * valid key are limited per client address, so key guessing is throttled too. Every
 * response gets RateLimit-* headers for the bucket nearest its limit; a spent daily
 * allowance outranks a spent minute.
 *
 * A request `concurrent` says is safe (a read: it changes nothing) is counted while it
 * runs, so its answer does not wait for two round trips to Postgres one after the other.
 * The count decides as before: past a limit the answer is the 429, whatever the read
 * found (its body let go, its headers taken back). A key seen within 10% of a limit has
 * its reads counted first again until that window resets, so a key past its limit costs
 * no more than a statement per request, as it always did. Where the counts are at hand (a
 * process counting alone, storage/db/rateCounting.ts), every request is judged before it runs.
 */
export function rateLimit(
  counters: Counters, limits: Config['limits'], bucketOf: (ctx: Ctx) => 'reads' | 'runs',
  /** How many calls the request makes (an MCP JSON-RPC batch makes several); 1 by default. */
  callsOf: (ctx: Ctx) => number = () => 1,
  concurrent: (ctx: Ctx) => boolean = () => false,
): Middleware {
  /** Keys last seen near a limit, until the window that was near resets (ms since the epoch). */
  const near = new Map<string, number>();
  const isNear = (who: string, now: number) => {
    const until = near.get(who);
    if (until === undefined) return false;
    if (until > now) return true;
    near.delete(who);
    return false;
  };
  const remember = (who: string, views: View[], now: number) => {
    let resetSeconds = -1;
    for (const v of views) if (v.limit - v.count < v.limit * NEAR_SHARE) resetSeconds = Math.max(resetSeconds, v.resetSeconds);
    if (resetSeconds < 0) return;
    near.delete(who);
    near.set(who, now + resetSeconds * 1000);
    if (near.size > NEAR_KEYS) near.delete(near.keys().next().value!);
  };

  return async (ctx, next) => {
    const points = Math.max(1, callsOf(ctx));
    const caller = ctx.state.caller;
    const now = Date.now();
    const bucket = caller ? bucketOf(ctx) : 'anonymous';
    const who = caller ? caller.key.id : `ip:${ctx.ip}`;
    const perMinute = bucket === 'runs' ? limits.runCreationPerMinute : limits.readsPerMinute;
    const minuteKey = `${bucket === 'runs' ? 'runs' : bucket === 'reads' ? 'reads' : 'anon'}:${who}`;
    const requests: CounterRequest[] = [{ key: minuteKey, windowMs: 60_000, points }];
    // The day is part of the daily key; its window outlives the day so the row expires after it.
    if (caller) requests.push({ key: dailyCounterKey(who, utcDay(now)), windowMs: DAILY_WINDOW_MS, points });
    const viewsOf = (counts: CounterState[]): View[] => {
      const views: View[] = [{ name: bucket === 'runs' ? 'run_creation' : bucket, limit: perMinute, count: counts[0]!.count, resetSeconds: Math.ceil(counts[0]!.resetMs / 1000) }];
      if (caller) views.push({ name: 'daily', limit: limits.dailyRequests, count: counts[1]!.count, resetSeconds: Math.ceil((utcDayEnd(now) - now) / 1000) });
      remember(minuteKey, views, now);
      return views;
    };
    // Counts at hand (this process counts alone) are judged before the request runs.
    const known = counters.incrementNow?.(requests, now);
    const atHand = known && viewsOf(known);
    const counted = atHand ? Promise.resolve(atHand) : counters.increment(requests, now).then(viewsOf, unavailable);
    // For an operation that shows it (GET /account), asked for only there.
    if (caller) ctx.state.requestsToday = () => counted.then(dailyCount);

    if (atHand || !caller || !concurrent(ctx) || isNear(minuteKey, now)) {
      announce(ctx, judge(atHand || (await counted)));
      await next();
      return;
    }
    const headersBefore = ctx.res.getHeaderNames();
    const [views, ran] = await Promise.all([counted.then(value, failure), next().then(nothing, failure)]);
    const verdict = 'v' in views ? judge(views.v) : undefined;
    if (!verdict || verdict.spent) {
      // What the read made is not the answer: its stream is let go and its headers taken back.
      if (ctx.body instanceof Stream) (ctx.body as Readable).destroy();
      for (const name of ctx.res.getHeaderNames()) if (!headersBefore.includes(name)) ctx.remove(name);
    }
    if (!verdict) throw (views as { err: unknown }).err;
    announce(ctx, verdict);
    if (ran) throw ran.err;
  };
}

import type { Middleware } from 'koa';
import type pg from 'pg';
import { createCounters, dailyCounterKey, utcDay } from '../../storage/db/rateLimits.ts';
import type { Config } from '../../kernel/config.ts';
import { errors } from '../errors.ts';

interface View { name: string; limit: number; count: number; resetSeconds: number }

/**
 * Per-key limits kept in Postgres, so they hold across every api process: a per-minute
 * bucket (tighter for run creation) and a daily fair-use count per UTC day, counted in
 * one statement shared by the requests of the same event-loop turn. Requests without a valid key are limited per client address, so key
 * guessing is throttled too. Every response gets RateLimit-* headers for the bucket
 * nearest its limit; a spent daily allowance outranks a spent minute.
 */
export function rateLimit(
  pool: pg.Pool, limits: Config['limits'], bucketOf: (ctx: Parameters<Middleware>[0]) => 'reads' | 'runs',
  /** How many calls the request makes (an MCP JSON-RPC batch makes several); 1 by default. */
  callsOf: (ctx: Parameters<Middleware>[0]) => number = () => 1,
): Middleware {
  const counters = createCounters(pool);
  return async (ctx, next) => {
    const points = Math.max(1, callsOf(ctx));
    const caller = ctx.state.caller;
    const now = new Date();
    const bucket = caller ? bucketOf(ctx) : 'anonymous';
    const who = caller ? caller.key.id : `ip:${ctx.ip}`;
    const perMinute = bucket === 'runs' ? limits.runCreationPerMinute : limits.readsPerMinute;
    const minuteKey = `${bucket === 'runs' ? 'runs' : bucket === 'reads' ? 'reads' : 'anon'}:${who}`;
    const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    const requests = [{ key: minuteKey, windowMs: 60_000, points }];
    // The day is part of the daily key; its window outlives the day so the row expires after it.
    if (caller) requests.push({ key: dailyCounterKey(who, utcDay(now)), windowMs: 2 * 86400_000, points });
    let counts;
    try {
      counts = await counters.increment(requests, now.getTime());
    } catch {
      throw errors.serviceUnavailable('postgres');
    }
    const views: View[] = [{ name: bucket === 'runs' ? 'run_creation' : bucket, limit: perMinute, count: counts[0]!.count, resetSeconds: Math.ceil(counts[0]!.resetMs / 1000) }];
    if (caller) views.push({ name: 'daily', limit: limits.dailyRequests, count: counts[1]!.count, resetSeconds: Math.ceil((midnight - now.getTime()) / 1000) });
    const spent = [...views].reverse().find((v) => v.count > v.limit);
    const shown = spent ?? views.reduce((a, b) => ((b.limit - b.count) / b.limit < (a.limit - a.count) / a.limit ? b : a));
    ctx.set('RateLimit-Limit', String(shown.limit));
    ctx.set('RateLimit-Remaining', String(Math.max(0, shown.limit - shown.count)));
    ctx.set('RateLimit-Reset', String(shown.resetSeconds));
    if (spent) throw errors.rateLimited(Math.max(1, spent.resetSeconds), spent.name);
    await next();
  };
}

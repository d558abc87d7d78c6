import type { Middleware } from 'koa';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Db } from '../../storage/db/knex.ts';
import { DAILY_PREFIX, dailyCounterKey, utcDay } from '../../storage/db/rateLimits.ts';
import type { Config } from '../config.ts';
import { errors } from '../errors.ts';

type Bucket = 'reads' | 'runs' | 'anonymous';

/**
 * Per-key limits kept in Postgres (rate-limiter-flexible's store), so they hold across
 * every api process: a per-minute bucket (tighter for run creation), and a daily
 * fair-use count per UTC day. Requests without a valid key are limited by address, so
 * key guessing is throttled too. Every response gets RateLimit-* headers for the bucket
 * nearest to its limit.
 */
export function rateLimit(db: Db, limits: Config['limits'], bucketOf: (ctx: Parameters<Middleware>[0]) => 'reads' | 'runs'): Middleware {
  const common = { storeClient: db, storeType: 'knex', tableName: 'rate_limits', tableCreated: true, clearExpiredByTimeout: false };
  const minute: Record<Bucket, RateLimiterPostgres> = {
    reads: new RateLimiterPostgres({ ...common, keyPrefix: 'reads', points: limits.readsPerMinute, duration: 60 }),
    runs: new RateLimiterPostgres({ ...common, keyPrefix: 'runs', points: limits.runCreationPerMinute, duration: 60 }),
    anonymous: new RateLimiterPostgres({ ...common, keyPrefix: 'anon', points: limits.readsPerMinute, duration: 60 }),
  };
  // The day is part of the key, so the count restarts at UTC midnight; the row outlives
  // the day by a margin and is then cleared.
  const daily = new RateLimiterPostgres({ ...common, keyPrefix: DAILY_PREFIX, points: limits.dailyRequests, duration: 2 * 86400 });

  const consume = async (limiter: RateLimiterPostgres, key: string): Promise<{ res: RateLimiterRes; ok: boolean }> => {
    try {
      return { res: await limiter.consume(key, 1), ok: true };
    } catch (rej) {
      if (rej instanceof RateLimiterRes) return { res: rej, ok: false };
      throw errors.serviceUnavailable('rate limit store');
    }
  };

  return async (ctx, next) => {
    const caller = ctx.state.caller;
    const bucket: Bucket = caller ? bucketOf(ctx) : 'anonymous';
    const who = caller ? caller.key.id : `ip:${ctx.ip}`;
    const now = new Date();
    const [m, d] = await Promise.all([
      consume(minute[bucket], who),
      caller ? consume(daily, dailyCounterKey(who, utcDay(now))) : Promise.resolve(undefined),
    ]);
    const secondsToMidnight = Math.ceil((Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) - now.getTime()) / 1000);
    const views = [
      { name: bucket === 'runs' ? 'run_creation' : bucket, limit: minute[bucket].points, ok: m.ok, remaining: m.res.remainingPoints, reset: Math.ceil(m.res.msBeforeNext / 1000) },
      ...(d ? [{ name: 'daily', limit: daily.points, ok: d.ok, remaining: d.res.remainingPoints, reset: secondsToMidnight }] : []),
    ];
    // A spent daily allowance outranks a spent minute: its Retry-After is the one that matters.
    const shown = [...views].reverse().find((v) => !v.ok) ?? views.reduce((a, b) => (b.remaining / b.limit < a.remaining / a.limit ? b : a));
    ctx.set('RateLimit-Limit', String(shown.limit));
    ctx.set('RateLimit-Remaining', String(Math.max(0, shown.remaining)));
    ctx.set('RateLimit-Reset', String(Math.max(0, shown.reset)));
    if (!shown.ok) throw errors.rateLimited(Math.max(1, shown.reset), shown.name);
    await next();
  };
}

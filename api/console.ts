import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';
import { send } from '@koa/send';
import { ApiError, errors } from './errors.ts';

/** Where `npm install` (its postinstall: `npm run console:build`) leaves the console's bundle. */
export const CONSOLE_DIST = fileURLToPath(new URL('../console/dist', import.meta.url));

const YEAR_MS = 365 * 24 * 3600 * 1000;

/**
 * The console's page and its content-hashed assets are files the console reads the key
 * from nowhere but its own tab, so they are served without authentication; everything
 * they show comes from /v1 with the key. The page may load only its own scripts and
 * styles and talk only to this origin, and no other site may frame it.
 */
/** The headers of a page this service serves to browsers, under its Content-Security-Policy. */
export function pageHeaders(contentSecurityPolicy: string): Record<string, string> {
  return {
    'Content-Security-Policy': contentSecurityPolicy,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
  };
}

const HEADERS = pageHeaders("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");

/**
 * GET /console/...: an asset by its hashed name (cached for a year: its name changes with
 * its bytes), and for any other path the page itself, whose router draws that path.
 */
export function consolePages(dist = CONSOLE_DIST): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/console' && !ctx.path.startsWith('/console/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw errors.methodNotAllowed(ctx.method, ['GET', 'HEAD']);
    if (ctx.path === '/console') return ctx.redirect('/console/');
    ctx.set(HEADERS);
    const rel = ctx.path.slice('/console/'.length);
    try {
      if (rel.startsWith('assets/')) {
        await send(ctx, rel, { root: dist, immutable: true, maxage: YEAR_MS, gzip: false, brotli: false });
        return;
      }
      await access(`${dist}/index.html`).catch(() => {
        throw new ApiError(503, 'console_not_built', 'The console has not been built on this server: run `npm run console:build`.', null, {}, { 'Retry-After': '60' });
      });
      await send(ctx, 'index.html', { root: dist, setHeaders: (res) => res.setHeader('Cache-Control', 'no-cache') });
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if ((err as { status?: number }).status === 404) throw errors.routeNotFound(ctx.method, ctx.path);
      throw err;
    }
  };
}

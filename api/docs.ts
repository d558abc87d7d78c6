import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';
import { send } from '@koa/send';
import { errors } from './errors.ts';
import { pageHeaders } from './console.ts';
import { OPENAPI_PATH } from './routeTable.ts';

/**
 * GET /docs: the API reference, drawn in the reader's browser by Scalar's open-source
 * API reference from /v1/openapi.json (every route with its request and response
 * schemas, generated examples, and "try it" against this service with the reader's key).
 * Scalar's browser bundle is served from the pinned package (package.json), never a CDN;
 * the page may load only this origin's scripts and talk only to this origin, so neither
 * telemetry nor Scalar's request proxy is reachable.
 */
// Scalar is its own install (api/scalar/package.json, run by the root postinstall on the
// project's Node): only its browser bundle is used, never its Node code.
const SCALAR_ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'scalar', 'node_modules', '@scalar', 'api-reference');
const SCALAR_VERSION: string = JSON.parse(readFileSync(path.join(SCALAR_ROOT, 'package.json'), 'utf8')).version;
const SCALAR_DIST = path.join(SCALAR_ROOT, 'dist/browser');
/** The bundle's path names its version, so it is cached for a year and replaced by an upgrade. */
export const SCALAR_SCRIPT = `/docs/scalar-${SCALAR_VERSION}.js`;
const INIT_SCRIPT = '/docs/init.js';
const YEAR_MS = 365 * 24 * 3600 * 1000;

const HEADERS = pageHeaders("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Silico API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
</head>
<body>
<div id="reference"></div>
<script src="${SCALAR_SCRIPT}"></script>
<script src="${INIT_SCRIPT}"></script>
</body>
</html>
`;

/**
 * Scalar's light theme with its text and method colours darkened to WCAG AA contrast
 * (4.5:1) on its backgrounds: its defaults (#8e8e8e text, #069061 POST, #ff5800 PUT,
 * #f6bc00 PATCH, #ef0006 DELETE) fall short, and axe-core says so.
 */
const READABLE_COLOURS = `.light-mode {
  --scalar-color-2: #5f5f5f !important; --scalar-color-3: #5e5e5e !important;
  --scalar-color-green: #006b43 !important; --scalar-color-orange: #a83a00 !important;
  --scalar-color-yellow: #725600 !important; --scalar-color-red: #b80004 !important;
}`;

/**
 * Scalar's configuration: the document, the bearer scheme the reader fills with a key
 * (kept in that tab only), requests sent straight to this origin (no proxy), every
 * group open, and nothing fetched from elsewhere (no fonts, telemetry, AI agent or MCP helper).
 */
const INIT = `Scalar.createApiReference('#reference', ${JSON.stringify({
  url: OPENAPI_PATH,
  proxyUrl: '',
  withDefaultFonts: false,
  telemetry: false,
  persistAuth: false,
  hideClientButton: false,
  mcp: { disabled: true },
  agent: { disabled: true },
  showDeveloperTools: 'never',
  defaultOpenAllTags: true,
  documentDownloadType: 'json',
  authentication: { preferredSecurityScheme: 'apiKey' },
  customCss: READABLE_COLOURS,
})});
`;

export function docsPages(): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== '/docs' && !ctx.path.startsWith('/docs/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw errors.methodNotAllowed(ctx.method, ['GET', 'HEAD']);
    ctx.set(HEADERS);
    if (ctx.path === '/docs') {
      ctx.type = 'text/html; charset=utf-8';
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = PAGE;
    } else if (ctx.path === INIT_SCRIPT) {
      ctx.type = 'text/javascript; charset=utf-8';
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = INIT;
    } else if (ctx.path === SCALAR_SCRIPT) {
      await send(ctx, 'standalone.js', { root: SCALAR_DIST, immutable: true, maxage: YEAR_MS });
    } else {
      throw errors.routeNotFound(ctx.method, ctx.path);
    }
  };
}

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { call, closeTestDb, newAccount } from '../helpers.ts';
import { ROUTES, fillPath } from '../../api/routeTable.ts';
import { TOOLS } from '../../api/tools/index.ts';
import { jsonBodySchema } from '../../api/tools/tool.ts';

after(closeTestDb);

const printable = fc.string({ unit: 'grapheme-ascii', maxLength: 80 });
// 'binary' strings reach every code point: U+0000 and lone surrogates included.
const anyText = fc.oneof(printable, fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom('', 'null', '-1', '0', '1e309', '../../etc', '%00', '{}', '[]', 'true'));
const json = fc.oneof(fc.jsonValue({ maxDepth: 4 }), fc.jsonValue({ maxDepth: 3, stringUnit: 'binary' }));

/** A body: random JSON, a random object with plausible field names, or raw junk. */
function bodyArb(fields: string[]) {
  const known = fields.length ? fc.dictionary(fc.constantFrom(...fields), json, { maxKeys: 6 }) : fc.dictionary(printable, json, { maxKeys: 4 });
  return fc.oneof(
    json.map((v) => ({ raw: JSON.stringify(v), type: 'application/json' })),
    known.map((v) => ({ raw: JSON.stringify(v), type: 'application/json' })),
    fc.tuple(anyText, fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', '', 'application/json; charset=latin1'))
      .map(([raw, type]) => ({ raw, type })),
    fc.constant(undefined),
  );
}

function headersArb(key: string) {
  return fc.record({
    auth: fc.oneof(fc.constant(`Bearer ${key}`), fc.constant(`Bearer ${key}`), fc.constant(`Bearer ${key}`), printable.map((s) => `Bearer ${s}`), printable),
    idem: fc.option(printable, { nil: undefined }),
    extra: fc.dictionary(fc.constantFrom('X-Request-ID', 'Accept', 'Accept-Encoding', 'If-None-Match', 'X-Forwarded-For', 'Cookie'), printable, { maxKeys: 3 }),
  });
}

function queryArb(names: string[]) {
  return fc.dictionary(fc.oneof(fc.constantFrom(...names, 'limit', 'cursor'), printable), fc.oneof(anyText, fc.array(anyText, { maxLength: 3 })), { maxKeys: 5 });
}

test('random bodies, query strings and headers never get a 5xx and always get the envelope', { timeout: 600_000 }, async () => {
  const { key } = await newAccount({ usd: 1 });
  const routes = ROUTES.filter((r) => TOOLS.get(r.tool)!.handler || r.method !== 'GET');
  for (const route of routes) {
    const tool = TOOLS.get(route.tool)!;
    const implemented = Boolean(tool.handler);
    const bodySchema = jsonBodySchema(tool) as { properties?: Record<string, unknown> } | undefined;
    const pathNames = Object.keys(tool.input.path ?? {});
    await fc.assert(
      fc.asyncProperty(
        fc.array(anyText, { minLength: pathNames.length, maxLength: pathNames.length }),
        queryArb(Object.keys(tool.input.query ?? {})),
        headersArb(key),
        bodyArb(Object.keys(bodySchema?.properties ?? {})),
        async (segments, query, h, body) => {
          const args = Object.fromEntries(pathNames.map((n, i) => [n, segments[i] || 'x']));
          const qs = new URLSearchParams();
          for (const [k, v] of Object.entries(query)) for (const x of [v].flat()) qs.append(k, x);
          const url = `${fillPath(route.path, args)}${qs.size ? `?${qs}` : ''}`;
          const headers: Record<string, string> = { Authorization: h.auth, ...h.extra };
          if (h.idem !== undefined) headers['Idempotency-Key'] = h.idem;
          if (body?.type) headers['Content-Type'] = body.type;
          const res = await call(route.method, url, { key: null, headers, rawBody: route.method === 'GET' ? undefined : body?.raw });
          const where = `${route.method} ${url} -> ${res.status} ${res.text.slice(0, 300)}`;
          assert.ok(res.status < 500 || (!implemented && res.status === 501), where);
          const rid = res.headers.get('x-request-id');
          assert.ok(rid, where);
          if (res.status >= 400) {
            const e = res.body?.error;
            assert.ok(e && typeof e.code === 'string' && typeof e.message === 'string' && typeof e.type === 'string', where);
            assert.ok('param' in e && typeof e.details === 'object', where);
            assert.equal(e.request_id, rid, where);
          } else {
            assert.equal(res.body.request_id, rid, where);
          }
        },
      ),
      { numRuns: implemented ? 120 : 25 },
    );
  }
});

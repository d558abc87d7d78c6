/** A self-contained HTML reference page rendered from the OpenAPI document. */
const esc = (s: unknown) => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

interface Op {
  operationId: string; summary: string; description: string; tags: string[];
  'x-required-scope': string; 'x-implemented': boolean; 'x-gateway-required': boolean; 'x-mcp-tool': string | null;
  parameters: Array<{ name: string; in: string; required: boolean; schema: Record<string, unknown> }>;
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown>; required?: string[] } }> };
  responses: Record<string, unknown>;
}

function schemaType(s: Record<string, unknown>): string {
  if (s.enum) return (s.enum as unknown[]).map((v) => JSON.stringify(v)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  const t = Array.isArray(s.type) ? s.type.join(' | ') : String(s.type ?? 'object');
  return s.format ? `${t} (${String(s.format)})` : t;
}

export function renderDocs(doc: Record<string, any>): string {
  const groups = new Map<string, Array<{ method: string; path: string; op: Op }>>();
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, Op>>)) {
    for (const [method, op] of Object.entries(methods)) {
      const g = op.tags[0] ?? 'other';
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g)!.push({ method: method.toUpperCase(), path, op });
    }
  }
  const sections = [...groups].map(([group, ops]) => `
  <section id="${esc(group)}"><h2>${esc(group)}</h2>
  ${ops.map(({ method, path, op }) => {
    const body = op.requestBody?.content?.['application/json']?.schema;
    const fields = body?.properties ? Object.entries(body.properties).map(([n, s]) => ({ name: n, in: 'body', required: (body.required ?? []).includes(n), schema: s as Record<string, unknown> })) : [];
    const params = [...op.parameters, ...fields];
    return `<article id="${esc(op.operationId)}">
    <h3><span class="m ${method.toLowerCase()}">${method}</span> <code>/v1${esc(path)}</code> ${op['x-implemented'] ? '' : '<span class="ni">not implemented yet (501)</span>'}</h3>
    <p>${esc(op.description).replace(/\n\n/g, '</p><p>').replace(/`([^`]+)`/g, '<code>$1</code>')}</p>
    <p class="meta">MCP tool: <code>${esc(op['x-mcp-tool'] ?? '(REST only)')}</code> · responses: ${Object.keys(op.responses).map((c) => `<code>${c}</code>`).join(' ')}</p>
    ${params.length ? `<table><tr><th>name</th><th>in</th><th>type</th><th>required</th></tr>${params.map((p) => `<tr><td><code>${esc(p.name)}</code></td><td>${esc(p.in)}</td><td>${esc(schemaType(p.schema))}</td><td>${p.required ? 'yes' : ''}</td></tr>`).join('')}</table>` : ''}
    </article>`;
  }).join('\n')}
  </section>`).join('\n');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(doc.info.title)} reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex;color:#1d2430}
nav{width:220px;padding:16px;border-right:1px solid #ddd;height:100vh;position:sticky;top:0;overflow:auto;background:#f7f8fa}
nav a{display:block;color:#1d4ed8;text-decoration:none;padding:2px 0}
main{padding:16px 32px;max-width:980px}
article{border-top:1px solid #eee;padding:8px 0}
h3{font-size:16px;margin:8px 0}
.m{display:inline-block;min-width:56px;text-align:center;border-radius:4px;color:#fff;font-size:12px;padding:2px 4px}
.get{background:#15803d}.post{background:#1d4ed8}.patch{background:#b45309}.put{background:#7c3aed}
.ni{font-size:12px;color:#b91c1c;border:1px solid #b91c1c;border-radius:4px;padding:1px 4px}
.meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
</style></head><body>
<nav><strong>${esc(doc.info.title)}</strong><br><small>envelope ${esc(doc.info.version)}</small><br><br>
<a href="/v1/openapi.json">openapi.json</a><br>${[...groups.keys()].map((g) => `<a href="#${esc(g)}">${esc(g)}</a>`).join('')}</nav>
<main><h1>${esc(doc.info.title)}</h1><p>${esc(doc.info.description)}</p>
<p>Authenticate every request with <code>Authorization: Bearer &lt;API_KEY&gt;</code>. Base URL: <code>${esc(doc.servers[0].url)}</code>.
Errors are <code>{error: {type, code, message, param, details, request_id}}</code>.</p>
${sections}</main></body></html>`;
}

import { parameterType, schemaTables } from './schema-tables.js';

type Json = Record<string, unknown>;

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A response as written (`{$ref: '#/components/responses/<name>'}` for the shared ones) with the reference followed. */
function resolveResponse(response: Json, shared: Record<string, Json>): Json {
  const ref = response.$ref;
  if (typeof ref !== 'string') return response;
  const target = shared[ref.replace(/^#\/components\/responses\//, '')];
  if (!target) throw new Error(`The OpenAPI document references ${ref}, which components.responses does not define`);
  return target;
}

/** A path that a narrow column may wrap after any `/` rather than cut off. */
const breakableAtSlashes = (path: string) => escapeHtml(path).replace(/\//g, '/<wbr>');

/**
 * A self-contained, browsable API reference rendered on the server from the OpenAPI document: no
 * script, no external assets, so it works on a closed network.
 */
export function renderReferencePage(doc: Json): string {
  const info = doc.info as { title: string; version: string; description: string };
  const paths = doc.paths as Record<string, Record<string, Json>>;
  const components = ((doc.components as Json | undefined)?.schemas ?? {}) as Json;
  const sharedResponses = ((doc.components as Json | undefined)?.responses ?? {}) as Record<string, Json>;
  const schemaBlock = (schema: unknown) => schemaTables(schema, components);
  const byTag = new Map<string, Array<{ method: string; path: string; op: Json }>>();
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const tag = ((op.tags as string[] | undefined) ?? ['other'])[0]!;
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push({ method, path, op });
    }
  }
  const tags = [...byTag.keys()].sort();
  const nav = tags
    .map(
      (tag) =>
        `<li><strong>${escapeHtml(tag)}</strong><ul>${byTag
          .get(tag)!
          .map(
            ({ method, path, op }) =>
              `<li><a href="#${escapeHtml(String(op.operationId))}" title="${method.toUpperCase()} ${escapeHtml(path)}"><code class="m ${method}">${method.toUpperCase()}</code><span class="p">${breakableAtSlashes(path)}</span></a></li>`,
          )
          .join('')}</ul></li>`,
    )
    .join('');
  const sections = tags
    .map((tag) => {
      const ops = byTag
        .get(tag)!
        .map(({ method, path, op }) => {
          const params = (op.parameters as Json[]) ?? [];
          const security = (op.security as Json[]) ?? [];
          const auth = security.length === 0 ? 'public' : security.map((s) => Object.keys(s)[0]).join(' or ');
          const permission = op['x-permission']
            ? ` · needs ${[op['x-permission']]
                .flat()
                .map((p) => `<code>${escapeHtml(String(p))}</code>`)
                .join(' or ')}`
            : '';
          const kinds = op['x-principal-kinds']
            ? ` · callers: ${escapeHtml((op['x-principal-kinds'] as string[]).join(', '))}`
            : '';
          const paramRows = params
            .map(
              (p) =>
                `<tr><td><code>${escapeHtml(String(p.name))}</code></td><td>${escapeHtml(String(p.in))}</td><td>${p.required ? 'yes' : 'no'}</td><td>${escapeHtml(String(p.description ?? ''))}</td><td>${parameterType(p.schema, components)}</td></tr>`,
            )
            .join('');
          const body = op.requestBody as { content: Record<string, { schema: unknown }> } | undefined;
          const responses = Object.entries(op.responses as Record<string, Json>)
            .map(([status, raw]) => {
              const r = resolveResponse(raw, sharedResponses);
              const schema = (r.content as { 'application/json'?: { schema: unknown } } | undefined)?.[
                'application/json'
              ]?.schema;
              const headers = Object.entries((r.headers ?? {}) as Record<string, { description?: string }>)
                .map(
                  ([name, h]) =>
                    `<p>Header <code>${escapeHtml(name)}</code>: ${escapeHtml(String(h.description ?? ''))}</p>`,
                )
                .join('');
              return `<details><summary><code>${escapeHtml(status)}</code> ${escapeHtml(String(r.description))}</summary>${headers}${schema ? schemaBlock(schema) : ''}</details>`;
            })
            .join('');
          return `<section class="op" id="${escapeHtml(String(op.operationId))}">
<h3><code class="m ${method}">${method.toUpperCase()}</code> <code>${escapeHtml(path)}</code></h3>
<p>${escapeHtml(String(op.summary ?? ''))}</p>${op.description ? `<p>${escapeHtml(String(op.description))}</p>` : ''}
<p class="auth">Auth: ${escapeHtml(auth)}${permission}${kinds}</p>
${paramRows ? `<table><tr><th>name</th><th>in</th><th>required</th><th>description</th><th>type and limits</th></tr>${paramRows}</table>` : ''}
${
  body
    ? `<h4>Request body</h4>${Object.entries(body.content)
        .map(([type, c]) => `<p><code>${escapeHtml(type)}</code></p>${schemaBlock(c.schema)}`)
        .join('')}`
    : ''
}
<h4>Responses</h4>${responses}</section>`;
        })
        .join('');
      return `<h2>${escapeHtml(tag)}</h2>${ops}`;
    })
    .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(info.title)} API reference</title>
<style>
body{font-family:system-ui,sans-serif;margin:0;display:flex;color:#1d2330}
nav{width:340px;height:100vh;overflow:auto;position:sticky;top:0;background:#f4f6f9;padding:1rem;font-size:.85rem;box-sizing:border-box}
nav ul{list-style:none;padding-left:.5rem} nav a{text-decoration:none;color:inherit}
nav li a{display:flex;gap:.3rem;align-items:baseline;margin:.1rem 0} nav li a .m{flex:none}
nav li a .p{min-width:0;overflow-wrap:anywhere}
main{flex:1;min-width:0;padding:1rem 2rem;max-width:1000px}
.op{border-top:1px solid #dde2ea;padding:.5rem 0}
.m{font-weight:bold;padding:0 .3rem;border-radius:3px;color:#fff}
.get{background:#2f7d32}.post{background:#1565c0}.put{background:#8e5a00}.patch{background:#6a1b9a}.delete{background:#b71c1c}
pre.schema,pre.example{background:#f7f7f9;padding:.5rem;overflow:auto;font-size:.8rem}
table.fields{width:100%;margin:.25rem 0}
table{border-collapse:collapse;font-size:.85rem} td,th{border:1px solid #dde2ea;padding:.2rem .4rem;text-align:left}
/* Limits and descriptions hold long unbroken tokens (patterns, codes): they may wrap anywhere, names never. */
td:nth-child(n+4){overflow-wrap:anywhere}
.auth{color:#555;font-size:.85rem}
</style></head><body><nav><p><strong>${escapeHtml(info.title)}</strong> ${escapeHtml(info.version)}</p><p><a href="/openapi.json">openapi.json</a></p><ul>${nav}</ul></nav>
<main><h1>${escapeHtml(info.title)}</h1><p>${escapeHtml(info.description)}</p>${sections}</main></body></html>`;
}

import { describe, expect, it } from 'vitest';
import { escapeHtml, html, join, safeHref } from '../../api/console/html.js';
import { exampleOf, schemaTables } from '../../api/http/schema-tables.js';

describe('console escaping template', () => {
  it('escapes every interpolation that is not itself html', () => {
    const hostile = `<script>alert("x")</script><img src=x onerror='y'>\`&`;
    const out = html`<p title="${hostile}">${hostile}</p>`.value;
    expect(out).toBe(`<p title="${escapeHtml(hostile)}">${escapeHtml(hostile)}</p>`);
    expect(out).not.toContain('<script>');
    expect(out).not.toContain("'y'");
    expect(escapeHtml(hostile)).toBe(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=&#39;y&#39;&gt;&#96;&amp;',
    );
  });

  it('keeps nested fragments as they were built and escapes arrays item by item', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<div>${inner}${['<a>', inner]}</div>`.value).toBe(
      '<div><b>&lt;i&gt;</b>&lt;a&gt;<b>&lt;i&gt;</b></div>',
    );
    expect(join([null, undefined, false, 0, '&']).value).toBe('0&amp;');
  });

  it('lets only same-origin paths and http(s) URLs into links', () => {
    expect(safeHref('/console/proposals/1')).toBe('/console/proposals/1');
    expect(safeHref('https://temporal.example/ns')).toBe('https://temporal.example/ns');
    expect(safeHref('javascript:alert(1)')).toBe('#');
    expect(safeHref('data:text/html,x')).toBe('#');
    expect(safeHref('//evil.example/')).toBe('#');
    expect(safeHref(null)).toBe('#');
  });
});

describe('reference page schema tables', () => {
  const components = {
    Requester: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
  };
  const schema = {
    type: 'object',
    required: ['name'],
    properties: {
      name: { type: 'string', minLength: 1, maxLength: 100, description: 'The <name>' },
      limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
      kind: { type: 'string', enum: ['a', 'b'] },
      note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
      requester: { $ref: '#/components/schemas/Requester' },
      tags: { type: 'array', items: { type: 'string' } },
    },
  };

  it('renders one row per field with type, required, limits and escaped descriptions', () => {
    const out = schemaTables(schema, components);
    expect(out).toContain('<table class="fields">');
    expect(out).toContain(
      '<td><code>name</code></td><td>string</td><td>yes</td><td>min length 1; max length 100</td><td>The &lt;name&gt;</td>',
    );
    expect(out).toContain('<td><code>limit</code></td><td>integer</td><td>no</td><td>≥ 1; ≤ 200; default 50</td>');
    expect(out).toContain('<td><code>note</code></td><td>string | null</td>');
    expect(out).toContain('<td><code>requester.id</code></td><td>string</td><td>yes</td>');
    expect(out).toContain('<td><code>tags</code></td><td>array of string</td>');
  });

  it('builds an example from the schema', () => {
    expect(exampleOf(schema, components)).toEqual({
      name: 'string',
      limit: 50,
      kind: 'a',
      note: 'string',
      requester: { id: 'string' },
      tags: ['string'],
    });
  });

  it('gives a oneOf body one table per variant, titled by its discriminator', () => {
    const out = schemaTables(
      {
        oneOf: [
          { type: 'object', properties: { action_type: { const: 'x.v1' }, a: { type: 'string' } } },
          { type: 'object', properties: { action_type: { const: 'y.v1' }, b: { type: 'number' } } },
        ],
      },
      {},
    );
    expect(out).toContain('<h5>action_type = &quot;x.v1&quot;</h5>');
    expect(out).toContain('<h5>action_type = &quot;y.v1&quot;</h5>');
    expect(out.match(/<table class="fields">/g)).toHaveLength(2);
  });
});

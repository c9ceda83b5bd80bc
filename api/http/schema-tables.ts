type Json = Record<string, unknown>;

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const MAX_DEPTH = 4;

/** Follows `#/components/schemas/<id>` references (zod's `meta({id})` schemas live there). */
function resolve(schema: unknown, components: Json): Json {
  let s = (schema ?? {}) as Json;
  for (let i = 0; i < 5 && typeof s.$ref === 'string'; i++) {
    const id = s.$ref.replace(/^#\/components\/schemas\//, '');
    s = {
      ...((components[id] as Json | undefined) ?? {}),
      ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== '$ref')),
    };
  }
  return s;
}

/** `anyOf: [X, {type: null}]` (zod's nullable) as X plus a flag. */
function unwrapNullable(schema: Json, components: Json): { schema: Json; nullable: boolean } {
  const union = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (Array.isArray(union) && union.length === 2) {
    const parts = union.map((u) => resolve(u, components));
    const nonNull = parts.filter((p) => p.type !== 'null');
    if (nonNull.length === 1)
      return { schema: { ...nonNull[0], description: schema.description ?? nonNull[0]!.description }, nullable: true };
  }
  return { schema, nullable: false };
}

function typeName(schema: Json, components: Json): string {
  if (schema.const !== undefined) return `const ${JSON.stringify(schema.const)}`;
  if (Array.isArray(schema.enum)) return 'enum';
  const union = (schema.anyOf ?? schema.oneOf) as unknown[] | undefined;
  if (Array.isArray(union)) return union.map((u) => typeName(resolve(u, components), components)).join(' | ');
  if (schema.type === 'array') return `array of ${typeName(resolve(schema.items, components), components)}`;
  if (Array.isArray(schema.type)) return schema.type.join(' | ');
  if (typeof schema.type === 'string') return schema.format ? `${schema.type} (${String(schema.format)})` : schema.type;
  return 'any';
}

/** A request integer without a real bound keeps zod's ±`Number.MAX_SAFE_INTEGER` (api/http/openapi.ts): shown as 2^53 − 1. */
function bound(value: unknown): string {
  if (value === Number.MAX_SAFE_INTEGER) return '2^53 − 1';
  if (value === Number.MIN_SAFE_INTEGER) return '−(2^53 − 1)';
  return JSON.stringify(value);
}

function limits(schema: Json): string {
  const out: string[] = [];
  const add = (key: string, label: string) => {
    if (schema[key] !== undefined) out.push(`${label} ${JSON.stringify(schema[key])}`);
  };
  add('minLength', 'min length');
  add('maxLength', 'max length');
  if (schema.minimum !== undefined) out.push(`≥ ${bound(schema.minimum)}`);
  add('exclusiveMinimum', '>');
  if (schema.maximum !== undefined) out.push(`≤ ${bound(schema.maximum)}`);
  add('exclusiveMaximum', '<');
  add('minItems', 'min items');
  add('maxItems', 'max items');
  if (Array.isArray(schema.enum)) out.push(`one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  add('default', 'default');
  // The no-NUL pattern every input string carries says nothing a reader needs.
  if (typeof schema.pattern === 'string' && schema.pattern !== '^[^\\u0000]*$') out.push(`pattern ${schema.pattern}`);
  return out.join('; ');
}

interface Row {
  name: string;
  type: string;
  required: boolean;
  limits: string;
  description: string;
}

function rows(schema: Json, components: Json, prefix: string, depth: number): Row[] {
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(properties).flatMap(([name, raw]) => {
    const { schema: prop, nullable } = unwrapNullable(resolve(raw, components), components);
    const full = `${prefix}${name}`;
    const row: Row = {
      name: full,
      type: typeName(prop, components) + (nullable ? ' | null' : ''),
      required: required.has(name),
      limits: limits(prop),
      description: String(prop.description ?? (raw as Json).description ?? ''),
    };
    if (depth >= MAX_DEPTH) return [row];
    if (prop.type === 'object' && prop.properties) return [row, ...rows(prop, components, `${full}.`, depth + 1)];
    const items = prop.type === 'array' ? resolve(prop.items, components) : null;
    if (items?.type === 'object' && items.properties) return [row, ...rows(items, components, `${full}[].`, depth + 1)];
    return [row];
  });
}

/** An example value built from the schema: its own example or default, else a value of its type. */
export function exampleOf(raw: unknown, components: Json, depth = 0): unknown {
  const schema = resolve(raw, components);
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (schema.example !== undefined) return schema.example;
  if (schema.const !== undefined) return schema.const;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const union = (schema.oneOf ?? schema.anyOf) as unknown[] | undefined;
  if (Array.isArray(union)) {
    const first = union.map((u) => resolve(u, components)).find((u) => u.type !== 'null') ?? {};
    return exampleOf(first, components, depth);
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'string':
      if (schema.format === 'date-time') return '2026-01-01T12:00:00Z';
      if (schema.format === 'uri' || schema.format === 'url') return 'https://example.com/';
      if (schema.format === 'email') return 'someone@example.com';
      return typeof schema.minLength === 'number' && schema.minLength > 6 ? 'x'.repeat(schema.minLength) : 'string';
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array':
      return depth >= MAX_DEPTH ? [] : [exampleOf(schema.items, components, depth + 1)];
    case 'object': {
      if (depth >= MAX_DEPTH || !schema.properties) return {};
      return Object.fromEntries(
        Object.entries(schema.properties as Record<string, unknown>).map(([k, v]) => [
          k,
          exampleOf(v, components, depth + 1),
        ]),
      );
    }
    default:
      return {};
  }
}

function table(schema: Json, components: Json): string {
  const found = rows(schema, components, '', 0);
  if (found.length === 0) return `<p>Type: <code>${escapeHtml(typeName(schema, components))}</code></p>`;
  return `<table class="fields"><thead><tr><th>name</th><th>type</th><th>required</th><th>limits</th><th>description</th></tr></thead><tbody>${found
    .map(
      (r) =>
        `<tr><td><code>${escapeHtml(r.name)}</code></td><td>${escapeHtml(r.type)}</td><td>${r.required ? 'yes' : 'no'}</td><td>${escapeHtml(r.limits)}</td><td>${escapeHtml(r.description)}</td></tr>`,
    )
    .join('')}</tbody></table>`;
}

/**
 * A schema as the reference page shows it: a field table (name, type, required, limits,
 * description; nested fields dotted), an example, and the raw JSON Schema folded away. A `oneOf`
 * body (one variant per action type) gets one table and example per variant.
 */
export function schemaTables(raw: unknown, components: Json): string {
  const schema = resolve(raw, components);
  const variants = Array.isArray(schema.oneOf) ? schema.oneOf.map((v) => resolve(v, components)) : null;
  const body =
    variants && variants.every((v) => v.type === 'object')
      ? variants
          .map((v, i) => {
            const discriminator = Object.entries((v.properties ?? {}) as Record<string, Json>).find(
              ([, p]) => p.const !== undefined,
            );
            const title = discriminator
              ? `${discriminator[0]} = ${JSON.stringify(discriminator[1].const)}`
              : `variant ${i + 1}`;
            return `<h5>${escapeHtml(title)}</h5>${table(v, components)}<p>Example</p><pre class="example">${escapeHtml(JSON.stringify(exampleOf(v, components), null, 2))}</pre>`;
          })
          .join('')
      : `${table(schema, components)}<p>Example</p><pre class="example">${escapeHtml(JSON.stringify(exampleOf(schema, components), null, 2))}</pre>`;
  return `${body}<details><summary>JSON Schema</summary><pre class="schema">${escapeHtml(JSON.stringify(raw, null, 2))}</pre></details>`;
}

/** A parameter's type and limits in one cell. */
export function parameterType(raw: unknown, components: Json): string {
  const schema = resolve(raw, components);
  const l = limits(schema);
  return escapeHtml(typeName(schema, components) + (l ? ` (${l})` : ''));
}

import { z } from 'zod';
import { bodyRequired, ErrorEnvelopeSchema, type AnyRoute } from './route.js';

type Json = Record<string, unknown>;

/** No text input may contain NUL (`shared/validation.ts`); the published schemas say so, for values and keys. */
const NO_NUL = '^[^\\u0000]*$';

/** Any JSON value without NUL in its strings or keys: what a free-form (`unknown`) input may hold. */
const NUL_FREE_JSON: Json = {
  description: 'Any JSON value; no string or key may contain NUL (\\u0000)',
  anyOf: [
    { type: 'string', pattern: NO_NUL },
    { type: ['number', 'boolean', 'null'] },
    // `unevaluatedItems` (with no `items` or `prefixItems`, the same rule as `items`): a union holding an array of
    // itself is a type TypeScript cannot declare through openapi-typescript's `components["schemas"][…]` (TS2502), so
    // client generators type the element as unknown while validators and fuzzers still apply the rule to every item.
    { type: 'array', unevaluatedItems: { $ref: '#/components/schemas/NulFreeJson' } },
    {
      type: 'object',
      propertyNames: { pattern: NO_NUL },
      additionalProperties: { $ref: '#/components/schemas/NulFreeJson' },
    },
  ],
};

/** Adds the NUL rule to every kept string (values and record keys) and free-form value of an input schema. */
function forbidNul(node: unknown, components: Json): void {
  if (Array.isArray(node)) return node.forEach((n) => forbidNul(n, components));
  if (!node || typeof node !== 'object') return;
  const schema = node as Json;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (
    types.includes('string') &&
    !('pattern' in schema) &&
    !('enum' in schema) &&
    !('const' in schema) &&
    !('format' in schema)
  ) {
    schema.pattern = NO_NUL;
  }
  for (const [key, value] of Object.entries(schema)) {
    const isSchemaSlot = key === 'items' || key === 'additionalProperties' || key === 'propertyNames';
    if (
      isSchemaSlot &&
      value &&
      typeof value === 'object' &&
      !Array.isArray(value) &&
      Object.keys(value).length === 0
    ) {
      components.NulFreeJson ??= NUL_FREE_JSON;
      schema[key] = key === 'propertyNames' ? { pattern: NO_NUL } : { $ref: '#/components/schemas/NulFreeJson' };
    } else if (key === 'properties' && value && typeof value === 'object') {
      for (const [name, prop] of Object.entries(value as Json)) {
        if (prop && typeof prop === 'object' && Object.keys(prop).length === 0) {
          components.NulFreeJson ??= NUL_FREE_JSON;
          (value as Json)[name] = { $ref: '#/components/schemas/NulFreeJson' };
        } else forbidNul(prop, components);
      }
    } else forbidNul(value, components);
  }
}

/** At least one character that is neither whitespace nor NUL, and no NUL anywhere. */
const NON_BLANK_NUL_FREE = '^[^\\u0000]*[^\\s\\uFEFF\\u0000][^\\u0000]*$';

/**
 * A string that is trimmed before its length is checked (`z.string().trim().min(1)`) refuses whitespace-only
 * input, which `minLength` alone does not say: such a string is published with a pattern asking for at least one
 * non-whitespace character (and, like every input string, no NUL), so the document is as strict as the validator.
 */
function trimmedNonBlank(ctx: { zodSchema: unknown; jsonSchema: Json }): void {
  const def = (ctx.zodSchema as { _zod?: { def?: { type?: string; checks?: unknown[] } } })._zod?.def;
  if (def?.type !== 'string' || !def.checks || typeof ctx.jsonSchema.minLength !== 'number') return;
  if (ctx.jsonSchema.minLength < 1 || ctx.jsonSchema.pattern !== undefined) return;
  let probe = '\u000b \t';
  for (const check of def.checks) {
    const c = (check as { _zod?: { def?: { check?: string; tx?: (v: string) => string } } })._zod?.def;
    if (c?.check === 'overwrite' && c.tx) probe = c.tx(probe);
  }
  // One pattern says both rules, since a pattern is where the NUL rule would go too (forbidNul keeps a set one).
  if (probe.length === 0) ctx.jsonSchema.pattern = NON_BLANK_NUL_FREE;
}

/**
 * zod publishes every `.int()` with ±`Number.MAX_SAFE_INTEGER` as its bounds when it has no real one. On what the
 * server sends they say nothing, so responses drop them. Requests keep them: the validator refuses an unsafe
 * integer, and a client or fuzzer reading the document must not take 2^60 for a valid value.
 */
function dropSafeIntegerBounds(ctx: { jsonSchema: Json }): void {
  if (ctx.jsonSchema.type !== 'integer') return;
  if (ctx.jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete ctx.jsonSchema.minimum;
  if (ctx.jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete ctx.jsonSchema.maximum;
}

/** Converts a zod schema to JSON Schema 2020-12 (OpenAPI 3.1's dialect), hoisting named schemas to components. */
function toSchema(schema: z.ZodType, io: 'input' | 'output', components: Json): Json {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    unrepresentable: 'any',
    io,
    cycles: 'ref',
    override: io === 'input' ? trimmedNonBlank : dropSafeIntegerBounds,
  }) as Json;
  if (io === 'input') forbidNul(json, components);
  delete json.$schema;
  const defs = json.$defs as Record<string, Json> | undefined;
  delete json.$defs;
  const rewritten = JSON.parse(
    JSON.stringify(json).replace(/"#\/\$defs\/([^"]+)"/g, '"#/components/schemas/$1"'),
  ) as Json;
  for (const [name, def] of Object.entries(defs ?? {})) {
    components[name] ??= JSON.parse(JSON.stringify(def).replace(/"#\/\$defs\/([^"]+)"/g, '"#/components/schemas/$1"'));
  }
  const id = (schema.meta() as { id?: string } | undefined)?.id;
  if (id) {
    const { id: _omit, ...rest } = rewritten;
    components[id] ??= rest;
    return { $ref: `#/components/schemas/${id}` };
  }
  return rewritten;
}

function parameters(location: 'path' | 'query' | 'header', schema: z.ZodObject | undefined, components: Json): Json[] {
  if (!schema) return [];
  return Object.entries(schema.shape).map(([name, field]) => {
    const fieldSchema = field as z.ZodType;
    const description =
      (fieldSchema.meta() as { description?: string } | undefined)?.description ?? fieldSchema.description;
    return {
      name,
      in: location,
      required: location === 'path' || !fieldSchema.safeParse(undefined).success,
      ...(description ? { description } : {}),
      schema: toSchema(fieldSchema, 'input', components),
    };
  });
}

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
});

export interface OpenApiInfo {
  title: string;
  version: string;
  description: string;
  serverUrl?: string;
}

const MEDIA_TYPES = { form: 'application/x-www-form-urlencoded', multipart: 'multipart/form-data' } as const;

/** A route's request body: JSON by default; form and multipart bodies under their media types, files as binary parts. */
function requestBody(route: AnyRoute, components: Json): Json {
  const mediaType = MEDIA_TYPES[route.bodyKind as keyof typeof MEDIA_TYPES] ?? 'application/json';
  let schema = toSchema((route.publishedBody ?? route.body) as z.ZodType, 'input', components);
  if (route.bodyKind === 'multipart' && route.multipart) {
    const files = Object.fromEntries(
      route.multipart.fileFields.map((field) => [
        field,
        { type: 'string', format: 'binary', description: `At most ${route.multipart!.maxFileBytes} bytes` },
      ]),
    );
    schema = {
      ...schema,
      type: 'object',
      properties: { ...((schema.properties as Json | undefined) ?? {}), ...files },
      // Every part counts: at most `maxFields` non-file fields plus the file parts (more answers 413).
      maxProperties: route.multipart.maxFields + Math.min(route.multipart.maxFiles, route.multipart.fileFields.length),
    };
  }
  return { required: bodyRequired(route), content: { [mediaType]: { schema } } };
}

/** The OpenAPI 3.1 document for every mounted route, generated from the same zod schemas that validate requests. */
export function buildOpenApi(routes: AnyRoute[], info: OpenApiInfo): Json {
  const components: Json = {};
  toSchema(ErrorEnvelopeSchema, 'output', components);
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    // `:name` is one segment, `*name` (path-to-regexp wildcard) one or more: both are `{name}` in OpenAPI.
    const path = route.path.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
    const responses: Json = {};
    for (const [status, spec] of Object.entries(route.responses)) {
      const response: Json = { description: spec.description };
      if (spec.headers)
        response.headers = Object.fromEntries(
          Object.entries(spec.headers).map(([name, h]) => [
            name,
            { description: h.description, schema: toSchema(h.schema, 'output', components) },
          ]),
        );
      if (spec.schema)
        response.content = {
          [spec.mediaType ?? 'application/json']: { schema: toSchema(spec.schema, 'output', components) },
        };
      responses[status] = response;
    }
    if (route.params || route.query || route.headers || route.body)
      responses['400'] ??= errorResponse(
        'Validation failure (`bad_request`); `payload.fields` lists the failing fields',
      );
    // Statuses any route of a kind can answer are documented once, under components/responses.
    if (route.body) responses['413'] ??= { $ref: '#/components/responses/PayloadTooLarge' };
    if (route.body) responses['415'] ??= { $ref: '#/components/responses/UnsupportedMediaType' };
    if (route.params) responses['404'] ??= { $ref: '#/components/responses/NotFound' };
    responses['405'] ??= { $ref: '#/components/responses/MethodNotAllowed' };
    responses['431'] ??= { $ref: '#/components/responses/HeadersTooLarge' };
    if (route.bodyKind === 'config')
      responses['422'] ??= errorResponse('Undeclared field in a configuration body (`unprocessable_entity`)');
    if (route.access.kind !== 'public')
      responses['401'] ??= errorResponse('Missing or invalid credential (`authentication`)');
    if (route.access.kind === 'authenticated' && (route.access.permission || route.access.principalKinds)) {
      responses['403'] ??= errorResponse('Permission refusal (`forbidden`) with administrator guidance');
    }
    if (route.access.kind === 'presenter') {
      responses['403'] ??= errorResponse(
        'Not a presenter (`forbidden`): needs `present_demos` and the role `staff` or `admin`, or the internal token',
      );
    }
    if (route.access.kind === 'authenticated' || route.access.kind === 'presenter') {
      // The hosted demo gate (api/auth/demo-gate.ts) may refuse any authenticated route in demo mode.
      responses['303'] ??= {
        description: 'Demo mode: a denied browser request (GET preferring text/html) is redirected to the refusal page',
      };
      const gate =
        'Demo mode: the demo gate refused a signed-in person (`demo_access_denied`; `payload.reason`, `detail`, `redirect_to`)';
      responses['403'] = responses['403']
        ? {
            ...responses['403'],
            description: `${(responses['403'] as { description: string }).description}; or: ${gate}`,
          }
        : errorResponse(gate);
    }
    responses['503'] ??= errorResponse('A dependency is unavailable (`service_unavailable`)');
    const security =
      route.access.kind === 'public'
        ? []
        : route.access.kind === 'internal'
          ? route.access.bearer
            ? [{ internalToken: [] }, { bearer: [] }]
            : [{ internalToken: [] }]
          : route.access.kind === 'presenter'
            ? [{ internalToken: [] }, { bearer: [] }, { serviceToken: [] }]
            : [{ bearer: [] }, { serviceToken: [] }];
    const operation: Json = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags,
      security,
      parameters: [
        ...parameters('path', route.params, components),
        ...parameters('query', route.query, components),
        ...parameters('header', route.headers, components),
      ],
      ...(route.body ? { requestBody: requestBody(route, components) } : {}),
      responses,
      // Where the spec has a 2xx say `success` false (all other refusals are 4xx/5xx envelopes).
      ...(route.successFalseAt2xx ? { 'x-success-false-at-2xx': route.successFalseAt2xx } : {}),
      ...(route.access.kind === 'authenticated' && route.access.permission
        ? { 'x-permission': route.access.permission }
        : {}),
      ...(route.access.kind === 'presenter' ? { 'x-permission': 'present_demos' } : {}),
      ...(route.access.kind === 'authenticated' && route.access.principalKinds
        ? { 'x-principal-kinds': route.access.principalKinds }
        : {}),
    };
    paths[path] = { ...(paths[path] ?? {}), [route.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    ...(info.serverUrl ? { servers: [{ url: info.serverUrl }] } : {}),
    paths,
    components: {
      schemas: components,
      responses: {
        NotFound: errorResponse(
          'No such resource, or one the caller may not see (`not_found`; never 403 for a hidden subject)',
        ),
        PayloadTooLarge: errorResponse(
          'Body larger than the configured limit (`payload_too_large`, `payload.limit_bytes`)',
        ),
        UnsupportedMediaType: errorResponse(
          'Body not sent as the media type this route takes (`unsupported_media_type`)',
        ),
        MethodNotAllowed: errorResponse(
          'Method not declared on this path (`method_not_allowed`); `Allow` lists the declared ones',
        ),
        HeadersTooLarge: {
          description: 'Request headers larger than the server accepts (answered by the HTTP server, no body)',
        },
      },
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An identity-provider access token (JWT), a personal access token `gp_…`, or a sandbox thread token `gsk_…`',
        },
        serviceToken: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Platform-Service-Token',
          description: 'The system identity',
        },
        internalToken: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Platform-Internal-Token',
          description: 'Internal routes only',
        },
      },
    },
  };
}

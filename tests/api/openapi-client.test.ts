/**
 * The OpenAPI document as a client developer uses it: a mainstream generator (openapi-typescript) makes
 * TypeScript types from it that compile under `strict`, and a mainstream linter (Redocly) finds it valid.
 * The document is built in-process exactly as `/openapi.json` serves it (`platformOpenApi(allRoutes())`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApi } from '../../api/http/openapi.js';
import { defineRoute } from '../../api/http/route.js';
import { allRoutes } from '../../api/routes/index.js';
import { platformOpenApi } from '../../api/routes/meta.js';

type Json = Record<string, any>;

let doc: Json;
let scratch: string;
let types: string;

beforeAll(async () => {
  doc = platformOpenApi(allRoutes());
  scratch = await mkdtemp(path.join(os.tmpdir(), 'openapi-client-'));
  types = astToString(await openapiTS(doc as OpenAPI3));
  await writeFile(path.join(scratch, 'schema.ts'), types);
  await writeFile(path.join(scratch, 'package.json'), JSON.stringify({ type: 'module' }));
}, 60_000);
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/**
 * Type-level use of a few operations. Each `@ts-expect-error` is a value the document's types must refuse, so
 * types that degraded to `any` or `unknown` fail the compile (an unused expectation is itself an error).
 */
const USAGE = `import type { components, paths } from './schema.js';

type JsonBody<Op> = Op extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Ok<Op> = Op extends { responses: { 200: { content: { 'application/json': infer R } } } } ? R : never;

type EchoBody = JsonBody<paths['/api/jobs/echo']['post']>;
export const echo: EchoBody = { message: 'hello', job_id: 'client-1' };
// @ts-expect-error message is a string
export const badEcho: EchoBody = { message: 42 };

export function workflowOf(result: Ok<paths['/api/jobs/echo']['post']>): string {
  return result.data.workflow_id;
}

type ToolCall = JsonBody<paths['/api/tool_call']['post']>;
export const call: ToolCall = { tool: '_document_index', arguments: { action: 'ADD_TEXT', index_name: 'notes', text: 'hi' } };
// @ts-expect-error ADD_TEXT takes no title (each tool's arguments are published closed)
export const badCall: ToolCall = { tool: '_document_index', arguments: { action: 'ADD_TEXT', index_name: 'n', text: 'x', title: 't' } };
export const json: components['schemas']['NulFreeJson'] = { a: [true, { b: 'c' }], n: null };
// @ts-expect-error a free-form value is JSON, not a function
export const notJson: components['schemas']['NulFreeJson'] = { f: () => 1 };

type Approve = JsonBody<paths['/api/action-review/proposals/{proposal_id}/approve']['post']>;
export const version: Approve['expected_version'] = 3;
// @ts-expect-error expected_version is a number
export const badVersion: Approve['expected_version'] = '3';

export type ProposalId = paths['/api/action-review/proposals/{proposal_id}']['get']['parameters']['path']['proposal_id'];
export const id: ProposalId = 'prop_1';
`;

/** The TypeScript compiler's own diagnostics for `files`, strict, with nothing from outside the folder. */
function compile(files: string[]): string[] {
  const program = ts.createProgram(files, {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ['lib.es2022.d.ts'],
    types: [],
    skipLibCheck: false,
  });
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file
      ? `${path.basename(d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start!).line + 1}`
      : '';
    return `${where} TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}

/** Every schema node under `node`, following `#/components/schemas/…` references once each. */
function* schemaNodes(node: unknown, seen = new Set<string>()): Generator<Json> {
  if (Array.isArray(node)) {
    for (const n of node) yield* schemaNodes(n, seen);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const schema = node as Json;
  if (typeof schema.$ref === 'string' && schema.$ref.startsWith('#/components/schemas/') && !seen.has(schema.$ref)) {
    seen.add(schema.$ref);
    yield* schemaNodes(doc.components.schemas[schema.$ref.slice('#/components/schemas/'.length)], seen);
  }
  yield schema;
  for (const value of Object.values(schema)) yield* schemaNodes(value, seen);
}

const carriesSafeBound = (s: Json) => s.minimum === Number.MIN_SAFE_INTEGER || s.maximum === Number.MAX_SAFE_INTEGER;

describe('a typed client from /openapi.json', () => {
  it(
    'openapi-typescript generates types that compile under strict with typed paths',
    { timeout: 120_000 },
    async () => {
      await writeFile(path.join(scratch, 'usage.ts'), USAGE);
      expect(types).toContain('"/api/tool_call"');
      expect(compile([path.join(scratch, 'usage.ts')])).toEqual([]);
    },
  );

  it(
    'a use of the generated types that breaks them is reported (the compile check can fail)',
    { timeout: 120_000 },
    async () => {
      const broken = path.join(scratch, 'broken.ts');
      await writeFile(
        broken,
        `import type { paths } from './schema.js';\nexport const x: paths['/api/jobs/echo']['post']['parameters']['query'] = 1;\n`,
      );
      expect(compile([broken]).join('\n')).toMatch(/broken\.ts:2 TS2322/);
    },
  );

  it('Redocly finds the document valid OpenAPI 3.1 with resolvable references and unique operation ids', async () => {
    const rules = [
      'struct',
      'no-unresolved-refs',
      'operation-operationId',
      'operation-operationId-unique',
      'operation-operationId-url-safe',
      'operation-parameters-unique',
      'path-parameters-defined',
      'path-declaration-must-exist',
      'path-not-include-query',
      'no-identical-paths',
      'security-defined',
      'no-enum-type-mismatch',
    ];
    const config = await createConfig({ rules: Object.fromEntries(rules.map((r) => [r, 'error' as const])) });
    const problems = await lintFromString({ source: JSON.stringify(doc), absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
  });
});

describe('integer bounds in the document', () => {
  it('no response schema carries zod’s ±Number.MAX_SAFE_INTEGER bounds', () => {
    const responseSchemas = Object.values(doc.paths as Json).flatMap((ops: Json) =>
      Object.values(ops).flatMap((op: Json) => Object.values(op.responses as Json)),
    );
    const nodes = [...schemaNodes(responseSchemas)];
    expect(nodes.filter((s) => s.type === 'integer').length).toBeGreaterThan(0);
    expect(nodes.filter(carriesSafeBound)).toEqual([]);
  });

  it('a request integer keeps the safe bound its validator enforces, and the response side drops it', () => {
    const route = defineRoute({
      method: 'post',
      path: '/counter',
      operationId: 'count',
      summary: 'Count',
      tags: ['test'],
      access: { kind: 'public' },
      body: z.object({ by: z.number().int().min(1) }),
      responses: { 200: { description: 'Counted', schema: z.object({ total: z.number().int().min(0) }) } },
      handler: async () => ({ total: 1 }),
    });
    const built = buildOpenApi([route], { title: 't', version: '1', description: 'd' }) as Json;
    const op = built.paths['/counter'].post;
    expect(op.requestBody.content['application/json'].schema.properties.by).toEqual({
      type: 'integer',
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
    });
    // The bound is a rule, not noise: a client or fuzzer sending 2^53 is refused.
    expect(route.body!.safeParse({ by: Number.MAX_SAFE_INTEGER + 1 }).success).toBe(false);
    expect(route.body!.safeParse({ by: Number.MAX_SAFE_INTEGER }).success).toBe(true);
    expect(op.responses['200'].content['application/json'].schema.properties.total).toEqual({
      type: 'integer',
      minimum: 0,
    });
  });
});

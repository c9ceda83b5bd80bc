/**
 * Tool arguments on the default layout (no model provider, built-in blueprints): every tool refuses an
 * argument it does not take, naming the known ones, on `POST /api/tool_call` and in an agent's turn
 * (the worker's toolbox); wrong types are refused; valid calls still work and answer their published
 * result schema; `/openapi.json` publishes every registered tool's argument and result schemas.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentToolbox } from '../../shared/tools/toolbox.js';
import { toolRegistry } from '../../shared/tools/index.js';
import { toolSchemaIds } from '../../shared/tools/published.js';
import { DocumentIndexResult } from '../../shared/tools/results.js';
import type { Principal } from '../../shared/auth/principal.js';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack({ worker: false });
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

const call = (tool: string, args: Record<string, unknown>) =>
  http(stack.url, 'POST', '/api/tool_call', { body: { tool, arguments: args } });
const indexCount = async () =>
  Number((await query<{ n: string }>(stack.db.url, 'select count(*) as n from doc_indexes'))[0]!.n);

const ADD_TEXT_ARGS = ['action', 'index_name', 'text', 'metadata', 'chunk_size', 'chunk_overlap', 'chunk_strategy'];

describe('POST /api/tool_call', () => {
  it('refuses an unknown argument with 400, naming it and the known arguments of the action, writing nothing', async () => {
    expect((await call('_document_index', { action: 'CREATE_INDEX', index_name: 'notes' })).status).toBe(200);
    const before = await indexCount();
    const res = await call('_document_index', { action: 'ADD_TEXT', index_name: 'notes', text: 'hello', title: 'x' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_type: 'bad_request', request_id: expect.any(String) });
    expect(res.body.error).toContain('arguments.title');
    expect(res.body.error).toContain('index_name, text, metadata');
    expect(res.body.payload.fields).toEqual([
      {
        field: 'body.arguments.title',
        code: 'unrecognized_keys',
        message: expect.stringContaining('the known ones are: action, index_name, text'),
        known: ADD_TEXT_ARGS,
      },
    ]);
    const docs = await query<{ n: string }>(stack.db.url, 'select count(*) as n from doc_documents');
    expect(Number(docs[0]!.n)).toBe(0);
    expect(await indexCount()).toBe(before);
  });

  it('names the known arguments of the action given, and of nested objects', async () => {
    const list = await call('_document_index', { action: 'LIST_INDICES', index_name: 'notes' });
    expect(list.status).toBe(400);
    expect(list.body.payload.fields).toEqual([
      expect.objectContaining({ field: 'body.arguments.index_name', known: ['action'] }),
    ]);
    const nested = await call('action_review', {
      action: 'CREATE_PROPOSAL',
      action_type: 'code_agent.start.v1',
      payload: { prompt: 'p' },
      expected_effect: 'e',
      subject: { kind: 'ticket', id: 'T-1', url: 'https://x' },
    });
    expect(nested.status).toBe(400);
    expect(nested.body.payload.fields).toEqual([
      expect.objectContaining({ field: 'body.arguments.subject.url', known: ['kind', 'id'] }),
    ]);
  });

  it('refuses an unknown argument of a tool without actions, saying it takes none', async () => {
    const strictOnly = await call('list_etl_jobs', { surely_not_an_argument: 1 });
    expect(strictOnly.status).toBe(400);
    expect(strictOnly.body.payload.fields).toEqual([
      expect.objectContaining({ field: 'body.arguments.surely_not_an_argument', known: [] }),
    ]);
    expect(strictOnly.body.error).toContain('(none)');
  });

  it('refuses an unknown field of the body itself (e.g. args for arguments)', async () => {
    const res = await http(stack.url, 'POST', '/api/tool_call', {
      body: { tool: '_document_index', args: { action: 'LIST_INDICES' } },
    });
    expect(res.status).toBe(400);
    expect(res.body.payload.fields).toEqual([
      expect.objectContaining({ field: 'body.args', code: 'unrecognized_keys', known: ['tool', 'arguments'] }),
    ]);
  });

  it('refuses a wrong type naming the field', async () => {
    const res = await call('_document_index', { action: 'SEARCH', query: 'backups', top_n: 'ten' });
    expect(res.status).toBe(400);
    expect(res.body.payload.fields).toEqual([
      expect.objectContaining({ field: 'body.arguments.top_n', code: 'invalid_type' }),
    ]);
  });

  it('still runs a valid call, whose result is what Tool__document_index_Result describes', async () => {
    const add = await call('_document_index', {
      action: 'ADD_TEXT',
      index_name: 'notes',
      text: 'Backups run nightly.',
    });
    expect(add.status, add.text).toBe(200);
    expect(DocumentIndexResult.safeParse(add.body.data.result).error).toBeUndefined();
    for (const args of [
      { action: 'LIST_INDICES' },
      { action: 'LIST_DOCUMENTS', index_name: 'notes' },
      { action: 'GET_INDICES_STATS' },
      { action: 'SEARCH', query: 'backups' },
      { action: 'ASK', query: 'when do backups run?' },
    ]) {
      const res = await call('_document_index', args);
      expect(res.status, res.text).toBe(200);
      expect(DocumentIndexResult.safeParse(res.body.data.result).error, args.action).toBeUndefined();
    }
  });
});

describe("an agent's tool call (the worker's toolbox)", () => {
  it('answers the same refusal as an error result the model reads', async () => {
    const agent: Principal = {
      kind: 'agent',
      id: 'sandbox-bot',
      tenant: stack.config.auth.deploymentTenant,
      displayName: 'sandbox bot',
      roles: [],
      permissions: new Set(),
      credential: 'sandbox_token',
      botId: 'sandbox-bot',
      threadId: 'thread-1',
    };
    const toolbox = createAgentToolbox(stack.api.deps);
    const out = await toolbox.invoke(
      '_document_index',
      { action: 'ADD_TEXT', index_name: 'notes', text: 't', title: 'x' },
      agent,
      'key-1',
    );
    expect(out.ok).toBe(false);
    expect(out.result).toMatchObject({
      error_type: 'bad_request',
      payload: { fields: [{ field: 'body.arguments.title', known: ADD_TEXT_ARGS }] },
    });
    const spec = toolbox.specs(['document_index_tools']).find((s) => s.function.name === '_document_index')!;
    const branches = (spec.function.parameters as { oneOf: Array<Record<string, unknown>> }).oneOf;
    for (const branch of branches) expect(branch.additionalProperties).toBe(false);
  });
});

/** Every object schema (with declared properties) in a JSON Schema, resolving nothing. */
function objectsOf(node: unknown, out: Array<Record<string, unknown>> = []) {
  if (Array.isArray(node)) node.forEach((n) => objectsOf(n, out));
  else if (node && typeof node === 'object') {
    const schema = node as Record<string, unknown>;
    if (schema.type === 'object' && schema.properties) out.push(schema);
    Object.values(schema).forEach((v) => objectsOf(v, out));
  }
  return out;
}

describe('/openapi.json', () => {
  it("publishes every registered tool's argument and result schemas, and the call body by tool", async () => {
    const doc = (await http(stack.url, 'GET', '/openapi.json')).body;
    const schemas = doc.components.schemas;
    const op = doc.paths['/api/tool_call'].post;
    const body = op.requestBody.content['application/json'].schema;
    const data = op.responses['200'].content['application/json'].schema.properties.data;
    expect(body.discriminator.propertyName).toBe('tool');
    expect(data.discriminator.propertyName).toBe('tool');
    for (const tool of toolRegistry.all()) {
      const ids = toolSchemaIds(tool.name);
      expect(schemas[ids.args], tool.name).toBeDefined();
      expect(schemas[ids.result], tool.name).toBeDefined();
      expect(body.discriminator.mapping[tool.name]).toBe(`#/components/schemas/${ids.call}`);
      expect(data.discriminator.mapping[tool.name]).toBe(`#/components/schemas/${ids.answer}`);
      expect(schemas[ids.call].properties.tool.const).toBe(tool.name);
      for (const object of objectsOf(schemas[ids.args]))
        expect(object.additionalProperties, `${tool.name} ${Object.keys(object.properties as object).join(',')}`).toBe(
          false,
        );
    }
    expect(body.oneOf).toHaveLength(toolRegistry.names().length);
    const addText = schemas[toolSchemaIds('_document_index').args].oneOf.find(
      (b: { properties: { action: { const: string } } }) => b.properties.action.const === 'ADD_TEXT',
    );
    expect(Object.keys(addText.properties)).toEqual(ADD_TEXT_ARGS);
  });
});

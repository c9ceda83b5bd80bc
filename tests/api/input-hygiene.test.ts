/**
 * Findings of the third-party fuzzer, fixed once for every route, tool and MCP action: NUL in any
 * text input is a 400 naming the field (PostgreSQL cannot store it; it once reached the driver as a
 * 500), a PUT without a body is a 400, and an undeclared method on a declared path is a 405 with Allow.
 */
import { request } from 'node:http';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { callPlatform, connectMcp } from '../mcp/support.js';

let stack: Stack;
let mcp: Client;

beforeAll(async () => {
  stack = await startStack({ worker: false });
  mcp = await connectMcp(stack.url, '/mcp');
});
afterAll(async () => {
  await mcp?.close();
  await stack?.close();
});

const agentCount = async () => Number((await query(stack.db.url, 'select count(*)::int as n from agents'))[0]!.n);

describe('NUL in text input', () => {
  it.each([
    ['instructions', { name: 'Nul', instructions: 'x\u0000' }, 'body.instructions'],
    ['access', { name: 'Nul', instructions: 'x', access: { roles: ['fin\u0000ance'] } }, 'body.access.roles.0'],
  ])('POST /api/agents refuses it in %s with 400 naming the field, and writes nothing', async (_where, body, field) => {
    const before = await agentCount();
    const res = await http(stack.url, 'POST', '/api/agents', { body });
    expect(res.status).toBe(400);
    expect(res.body.error_type).toBe('bad_request');
    expect(res.body.payload.fields).toEqual([
      { field, message: expect.stringContaining('NUL'), code: 'nul_character' },
    ]);
    expect(await agentCount()).toBe(before);
  });

  it('POST /api/tool_call refuses it inside the arguments', async () => {
    const res = await http(stack.url, 'POST', '/api/tool_call', {
      body: { tool: 'action_review', arguments: { action: 'GET_REQUEST_STATUS', proposal_id: 'a\u0000b' } },
    });
    expect(res.status).toBe(400);
    expect(res.body.payload.fields).toEqual([
      expect.objectContaining({ field: 'body.arguments.proposal_id', code: 'nul_character' }),
    ]);
  });

  it('an MCP action refuses it as a tool error naming the parameter', async () => {
    const { isError, data } = await callPlatform(mcp, { action: 'thread_create', initial_prompt: 'hello\u0000' });
    expect(isError).toBe(true);
    expect(data.error_type).toBe('bad_request');
    expect(data.payload.fields).toEqual([expect.objectContaining({ field: 'initial_prompt', code: 'nul_character' })]);
    expect(Number((await query(stack.db.url, 'select count(*)::int as n from conversation_threads'))[0]!.n)).toBe(0);
  });

  it('is refused in a key that is kept (free-form arguments), and ignored in an undeclared field that is dropped', async () => {
    const key = await http(stack.url, 'POST', '/api/tool_call', {
      body: { tool: 'action_review', arguments: { action: 'GET_REQUEST_STATUS', 'proposal\u0000id': 'x' } },
    });
    expect(key.status).toBe(400);
    expect(key.body.payload.fields).toEqual([
      expect.objectContaining({ field: 'body.arguments.proposal\\u0000id', code: 'nul_character' }),
    ]);
    const dropped = await http(stack.url, 'POST', '/api/agents', {
      body: { name: 'Dropped', instructions: 'x', 'not\u0000declared': 'x\u0000' },
    });
    expect(dropped.status).toBe(201);
    const stored = await query(stack.db.url, 'select * from agents where name = $1', ['Dropped']);
    expect(JSON.stringify(stored)).not.toContain('declared');
  });

  it('is refused in query strings too', async () => {
    const res = await http(stack.url, 'GET', '/api/action-review/proposals?status=requested%00');
    expect(res.status).toBe(400);
    expect(res.body.payload.fields[0].field).toMatch(/^query\.status/);
  });
});

describe('missing bodies', () => {
  it('PUT /api/config/gateway without a body is a 400 and changes nothing', async () => {
    const before = await http(stack.url, 'GET', '/api/config/gateway');
    const res = await http(stack.url, 'PUT', '/api/config/gateway');
    expect(res.status).toBe(400);
    expect(res.body.payload.fields).toEqual([
      { field: 'body', message: 'this request needs a JSON body', code: 'body_required' },
    ]);
    expect((await http(stack.url, 'GET', '/api/config/gateway')).body.data).toEqual(before.body.data);
  });

  it('the OpenAPI document says which bodies are required', async () => {
    const doc = (await http(stack.url, 'GET', '/openapi.json')).body;
    expect(doc.paths['/api/config/gateway'].put.requestBody.required).toBe(true);
    expect(doc.paths['/api/agents'].post.requestBody.required).toBe(true);
  });

  it('the OpenAPI document says a trimmed required string needs a non-whitespace character, as the validator does', async () => {
    const doc = (await http(stack.url, 'GET', '/openapi.json')).body;
    const body = doc.paths['/api/internal/sandbox-tokens'].post.requestBody.content['application/json'].schema;
    const pattern = body.properties.bot_id.pattern as string;
    expect(new RegExp(pattern).test('\u000b')).toBe(false);
    expect(new RegExp(pattern).test('bot\u0000')).toBe(false); // the NUL rule holds in the same pattern
    expect(new RegExp(pattern).test('\ufeff')).toBe(false);
    expect(new RegExp(pattern).test(' bot ')).toBe(true);
  });
});

describe('undeclared methods', () => {
  it.each(['TRACE', 'PATCH'])('%s on a declared path answers 405 with Allow in the error envelope', async (method) => {
    const res = await rawRequest(stack.url, method, '/api/agents');
    expect(res.status).toBe(405);
    expect(res.body.error_type).toBe('method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    expect(res.body.request_id).toBe(res.headers.get('x-request-id'));
  });

  it('OPTIONS answers 204 with Allow; an unknown path stays 404', async () => {
    const options = await rawRequest(stack.url, 'OPTIONS', '/api/agents');
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    expect((await rawRequest(stack.url, 'TRACE', '/api/nothing-here')).status).toBe(404);
  });
});

/** Any method, TRACE included (fetch refuses to send it). */
function rawRequest(
  base: string,
  method: string,
  path: string,
): Promise<{ status: number; headers: Headers; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(base + path, { method }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
        resolve({ status: res.statusCode!, headers, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

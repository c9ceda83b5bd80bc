import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mcpActionCatalog } from '../../api/mcp/actions/index.js';
import { platformInputSchema } from '../../api/mcp/schema.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { callPlatform, connectMcp, rawMcpPost } from './support.js';

let stack: Stack;
const clients: Client[] = [];
const connect = async (path: string) => {
  const client = await connectMcp(stack.url, path);
  clients.push(client);
  return client;
};

beforeAll(async () => {
  stack = await startStack({ worker: false });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await stack?.close();
});

const V1_ONLY = ['ask', 'login', 'login_status', 'logout'];

describe('tools', () => {
  it.each(['/mcp', '/mcp/', '/mcp/v2', '/mcp/v2/'])(
    '%s lists one platform tool with the v2 action enum',
    async (path) => {
      const client = await connect(path);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['platform']);
      const action = (tools[0]!.inputSchema.properties as Record<string, any>).action;
      expect(action.enum).toEqual(
        expect.arrayContaining(['list_agents', 'thread_create', 'status', 'help', 'room_who']),
      );
      for (const name of V1_ONLY) expect(action.enum).not.toContain(name);
      expect(tools[0]!.inputSchema.required).toEqual(['action']);
      // Closed, from the same zod schema the gateway builds: every action's parameters, nothing else.
      expect(tools[0]!.inputSchema.additionalProperties).toBe(false);
      const advertised = z.toJSONSchema(platformInputSchema(mcpActionCatalog, 'v2'), { io: 'input' });
      expect(Object.keys(tools[0]!.inputSchema.properties!).sort()).toEqual(Object.keys(advertised.properties!).sort());
      const params = mcpActionCatalog.actions('v2').flatMap((a) => Object.keys(a.params.shape));
      expect(Object.keys(tools[0]!.inputSchema.properties!).sort()).toEqual([...new Set(['action', ...params])].sort());
      expect((tools[0]!.inputSchema.properties as Record<string, any>).about.type).toBe('string');
    },
  );

  it('v1 advertises the legacy actions as well', async () => {
    const client = await connect('/mcp/v1/');
    const { tools } = await client.listTools();
    const action = (tools[0]!.inputSchema.properties as Record<string, any>).action;
    expect(action.enum).toEqual(expect.arrayContaining([...V1_ONLY, 'status', 'help', 'list_agents']));
  });
});

describe('status and help', () => {
  it.each([
    ['/mcp/', 'v2'],
    ['/mcp/v2/', 'v2'],
    ['/mcp/v1/', 'v1'],
  ])('status on %s reports %s, the local admin and sign-in off', async (path, version) => {
    const { isError, data } = await callPlatform(await connect(path), { action: 'status' });
    expect(isError).toBe(false);
    expect(data.gateway).toMatchObject({
      version,
      endpoint: `${stack.url}${path}`,
      server: { name: 'data-agent-platform' },
    });
    expect(data.caller).toMatchObject({ kind: 'person', id: 'local-admin', credential: 'auth_disabled' });
    expect(data.auth).toMatchObject({
      mode: 'none',
      provider: 'none',
      oauth_proxy_enabled: false,
      oidc_checks: 'not_applicable',
    });
    expect(data.default_agent).toBeDefined();
  });

  it('help on v2 lists v2 actions with parameters and points to v1 for the legacy ones', async () => {
    const { data } = await callPlatform(await connect('/mcp/v2/'), { action: 'help' });
    const names = data.actions.map((a: { name: string }) => a.name);
    expect(names).toContain('thread_create');
    expect(names).not.toContain('login');
    expect(data.actions.find((a: any) => a.name === 'help').parameters).toEqual([
      expect.objectContaining({ name: 'about', required: false, schema: expect.objectContaining({ type: 'string' }) }),
    ]);
    expect(data.legacy).toContain('/mcp/v1/');
  });

  it('help on v1 includes the legacy actions; about narrows to one', async () => {
    const client = await connect('/mcp/v1/');
    const all = await callPlatform(client, { action: 'help' });
    expect(all.data.actions.map((a: { name: string }) => a.name)).toEqual(expect.arrayContaining(V1_ONLY));
    const one = await callPlatform(client, { action: 'help', about: 'logout' });
    expect(one.data.actions).toEqual([expect.objectContaining({ name: 'logout', available: true, parameters: [] })]);
  });
});

describe('versions', () => {
  it.each(V1_ONLY)('v2 refuses %s naming /mcp/v1/', async (action) => {
    const { isError, data } = await callPlatform(await connect('/mcp/'), { action });
    expect(isError).toBe(true);
    expect(data).toMatchObject({
      error_type: 'bad_request',
      payload: { reason: 'action_not_in_version', available_on: '/mcp/v1/' },
    });
    expect(data.error).toContain('/mcp/v1/');
    expect(data.request_id).toEqual(expect.any(String));
  });

  it('v1 answers login, login_status and logout', async () => {
    const client = await connect('/mcp/v1');
    const login = await callPlatform(client, { action: 'login' });
    expect(login.isError).toBe(false);
    expect(login.data).toMatchObject({
      mode: 'none',
      sign_in_url: null,
      personal_access_tokens: { create: `POST ${stack.url}/api/auth/pats` },
    });
    const status = await callPlatform(client, { action: 'login_status' });
    expect(status.data).toMatchObject({ authenticated: false, sign_in_required: false, caller: { id: 'local-admin' } });
    const logout = await callPlatform(client, { action: 'logout' });
    expect(logout.data.message).toContain('DELETE /api/auth/pats/{id}');
  });

  it('unknown actions and foreign parameters are refused with the action list', async () => {
    const client = await connect('/mcp/v2/');
    const unknown = await callPlatform(client, { action: 'fly' });
    expect(unknown).toMatchObject({ isError: true, data: { payload: { reason: 'unknown_action' } } });
    expect(unknown.data.payload.actions).toContain('status');
    const foreign = await callPlatform(client, { action: 'status', about: 'help' });
    expect(foreign).toMatchObject({
      isError: true,
      data: {
        error_type: 'bad_request',
        payload: { action: 'status', fields: [{ field: 'about', code: 'unrecognized_keys', known: [] }] },
      },
    });
    expect(foreign.data.error).toContain('(none)');
  });

  it('refuses a parameter no action takes (once dropped silently), naming the parameters of the action', async () => {
    const client = await connect('/mcp/v2/');
    const res = await callPlatform(client, { action: 'read_skill', skill_name: 'x', title: 'y' });
    expect(res).toMatchObject({
      isError: true,
      data: {
        error_type: 'bad_request',
        request_id: expect.any(String),
        payload: {
          action: 'read_skill',
          fields: [{ field: 'title', code: 'unrecognized_keys', known: ['skill_name', 'relative_path'] }],
        },
      },
    });
    expect(res.data.error).toContain('skill_name, relative_path');
    const wrongType = await callPlatform(client, { action: 'read_skill', skill_name: 42 });
    expect(wrongType.isError).toBe(true);
  });
});

describe('transport', () => {
  it('answers GET and DELETE with 405 and Allow: POST', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await http(stack.url, method, '/mcp/v2/');
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.body.error_type).toBe('method_not_allowed');
    }
  });

  it('refuses a foreign Origin with 403 and admits loopback origins', async () => {
    const evil = await rawMcpPost(stack.url, '/mcp/', { origin: 'https://evil.example' });
    expect(evil.status).toBe(403);
    expect(await evil.json()).toMatchObject({ error_type: 'forbidden', payload: { reason: 'origin_not_allowed' } });
    const local = await rawMcpPost(stack.url, '/mcp/', { origin: 'http://localhost:6274' });
    expect(local.status).toBe(200);
    expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:6274');
    const preflight = await fetch(stack.url + '/mcp/v2/', {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example' },
    });
    expect(preflight.status).toBe(403);
  });

  it('every gateway path is in the OpenAPI document', async () => {
    const res = await http(stack.url, 'GET', '/openapi.json');
    for (const path of ['/mcp', '/mcp/', '/mcp/v1', '/mcp/v1/', '/mcp/v2', '/mcp/v2/']) {
      expect(Object.keys(res.body.paths[path]).sort()).toEqual(['delete', 'get', 'post']);
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { PEOPLE, type OidcStack } from '../helpers/oidc-stack.js';
import { http, type Stack } from '../helpers/stack.js';
import { startAgentsStack } from './support.js';

let s: OidcStack<'admin' | 'analyst' | 'finance'>;
let stack: Stack;
let admin: string;
let analyst: string;
let finance: string;

beforeAll(async () => {
  s = await startAgentsStack({
    worker: false,
    env: { PLATFORM_MCP_DEFAULT_AGENT_ID: 'adam' },
    tokens: { admin: PEOPLE.admin, analyst: PEOPLE.member, finance: { sub: 'fin', roles: ['finance'] } },
  });
  stack = s.stack;
  ({ admin, analyst, finance } = s.tokens);
});
afterAll(() => s?.close());

describe('agent registry', () => {
  it('has the built-in Eve and Adam for everyone', async () => {
    const res = await http(stack.url, 'GET', '/api/agents', { token: analyst });
    expect(res.status).toBe(200);
    expect(res.body.data.agents.map((a: { name: string; source: string }) => `${a.name}:${a.source}`)).toEqual([
      'Adam:builtin',
      'Eve:builtin',
    ]);
  });

  it('creates an agent restricted by role, visible only to that role and to agent managers', async () => {
    const created = await http(stack.url, 'POST', '/api/agents', {
      token: admin,
      body: {
        name: 'Ledger',
        instructions: 'Reconcile books.',
        tool_groups: ['action_review'],
        access: { roles: ['finance'] },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.data.agent_id as string;
    expect(id).toMatch(/^agent_[0-9a-f]{16}$/);
    expect((await http(stack.url, 'GET', `/api/agents/${id}`, { token: finance })).status).toBe(200);
    const hidden = await http(stack.url, 'GET', `/api/agents/${id}`, { token: analyst });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error_type).toBe('not_found');
    const list = await http(stack.url, 'GET', '/api/agents', { token: analyst });
    expect(list.body.data.agents.map((a: { name: string }) => a.name)).not.toContain('Ledger');
  });

  it('tool_groups name groups from the one table: an unknown group is refused 400 naming the field, a reserved one is accepted', async () => {
    const before = await query(stack.db.url, 'select id from agents order by id');
    const unknown = await http(stack.url, 'POST', '/api/agents', {
      token: admin,
      body: { name: 'Typo', instructions: 'x', tool_groups: ['action_review', 'crm_connector'] },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.payload.fields[0].field).toBe('body.tool_groups.1');
    expect(unknown.body.payload.fields[0].message).toContain('crm_connector_tools');
    expect(await query(stack.db.url, 'select id from agents order by id')).toEqual(before);

    const created = await http(stack.url, 'POST', '/api/agents', {
      token: admin,
      body: { name: 'Loader', instructions: 'x', tool_groups: ['etl_tools', 'crm_connector_tools'] },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.tool_groups).toEqual(['etl_tools', 'crm_connector_tools']);
    const patched = await http(stack.url, 'PATCH', `/api/agents/${created.body.data.agent_id}`, {
      token: admin,
      body: { tool_groups: ['no_such_group'] },
    });
    expect(patched.status).toBe(400);
    expect(patched.body.payload.fields[0].field).toBe('body.tool_groups.0');
    const stored = await query<{ tool_groups: string[] }>(
      stack.db.url,
      'select tool_groups from agents where id = $1',
      [created.body.data.agent_id],
    );
    expect(stored[0]!.tool_groups).toEqual(['etl_tools', 'crm_connector_tools']);

    const builtIns = await http(stack.url, 'GET', '/api/agents', { token: admin });
    const groupsOf = (name: string) =>
      builtIns.body.data.agents.find((a: { name: string }) => a.name === name).tool_groups;
    expect(groupsOf('Eve')).toEqual(['action_review', 'agent_files', 'document_index_tools']);
    expect(groupsOf('Adam')).toEqual(['action_review', 'agent_files', 'etl_tools', 'enhancement_tools']);
  });

  it('the enhancement_tools group is built now: its tool validates input instead of answering 501', async () => {
    const res = await http(stack.url, 'POST', '/api/tool_call', {
      token: admin,
      body: { tool: 'enhancement_action', arguments: {} },
    });
    expect(res.status).toBe(400);
    expect(res.body.payload?.reason).not.toBe('tool_not_built');
    const unknown = await http(stack.url, 'POST', '/api/tool_call', {
      token: admin,
      body: { tool: 'no_such_tool', arguments: {} },
    });
    expect(unknown.status).toBe(404);
  });

  it('refuses creation without manage_agents, duplicate names and bad input, writing nothing', async () => {
    const before = await query(stack.db.url, 'select id from agents order by id');
    const forbidden = await http(stack.url, 'POST', '/api/agents', {
      token: analyst,
      body: { name: 'Sneaky', instructions: 'x' },
    });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.payload.required_permission).toBe('manage_agents');
    const dup = await http(stack.url, 'POST', '/api/agents', {
      token: admin,
      body: { name: 'eve', instructions: 'x' },
    });
    expect(dup.status).toBe(409);
    expect(dup.body.payload.code).toBe('AGENT_NAME_TAKEN');
    const bad = await http(stack.url, 'POST', '/api/agents', { token: admin, body: { name: '', instructions: 7 } });
    expect(bad.status).toBe(400);
    expect(await query(stack.db.url, 'select id from agents order by id')).toEqual(before);
  });

  it('edits agents but keeps built-in names and refuses deleting built-ins', async () => {
    const renamed = await http(stack.url, 'PATCH', '/api/agents/eve', { token: admin, body: { name: 'Evelyn' } });
    expect(renamed.status).toBe(409);
    expect(renamed.body.payload.code).toBe('BUILT_IN_AGENT');
    const restricted = await http(stack.url, 'PATCH', '/api/agents/eve', {
      token: admin,
      body: { access: { users: ['root'] } },
    });
    expect(restricted.status).toBe(200);
    expect(restricted.body.data.access).toEqual({ roles: [], users: ['root'] });
    expect((await http(stack.url, 'GET', '/api/agents/eve', { token: analyst })).status).toBe(404);
    const del = await http(stack.url, 'DELETE', '/api/agents/eve', { token: admin });
    expect(del.status).toBe(409);
    await http(stack.url, 'PATCH', '/api/agents/eve', { token: admin, body: { access: { users: [] } } });
  });

  it('refuses editing a managed agent', async () => {
    await query(
      stack.db.url,
      `insert into agents (id, tenant, name, instructions, source, is_editable, created_by, created_at, updated_at)
       values ('agent_managed', 'default', 'FromRepo', 'x', 'managed', false, 'sync', now(), now())`,
    );
    const res = await http(stack.url, 'PATCH', '/api/agents/agent_managed', {
      token: admin,
      body: { instructions: 'changed' },
    });
    expect(res.status).toBe(409);
    expect(res.body.payload.code).toBe('AGENT_NOT_EDITABLE');
  });
});

describe('gateway settings', () => {
  it('reports the env default, stores a setting, and clearing falls back to env', async () => {
    const initial = await http(stack.url, 'GET', '/api/config/gateway', { token: admin });
    expect(initial.body.data).toEqual({
      default_agent_id: null,
      default_agent_unavailable_policy: null,
      effective: { default_agent_id: 'adam', default_agent_unavailable_policy: 'require_selection' },
    });
    const set = await http(stack.url, 'PUT', '/api/config/gateway', {
      token: admin,
      body: { default_agent_id: 'eve', default_agent_unavailable_policy: 'first_available' },
    });
    expect(set.body.data.effective).toEqual({
      default_agent_id: 'eve',
      default_agent_unavailable_policy: 'first_available',
    });
    const cleared = await http(stack.url, 'PUT', '/api/config/gateway', {
      token: admin,
      body: { default_agent_id: null },
    });
    expect(cleared.body.data).toMatchObject({ default_agent_id: null, effective: { default_agent_id: 'adam' } });
  });

  it('refuses undeclared fields with 422 and non-admins with 403, writing nothing', async () => {
    const before = await query(stack.db.url, `select key, value from deployment_settings order by key`);
    const undeclared = await http(stack.url, 'PUT', '/api/config/gateway', {
      token: admin,
      body: { default_agent_id: 'adam', colour: 'blue' },
    });
    expect(undeclared.status).toBe(422);
    expect(undeclared.body.payload.fields).toEqual(['body.colour']);
    const forbidden = await http(stack.url, 'PUT', '/api/config/gateway', {
      token: analyst,
      body: { default_agent_id: 'adam' },
    });
    expect(forbidden.status).toBe(403);
    expect(await query(stack.db.url, `select key, value from deployment_settings order by key`)).toEqual(before);
  });
});

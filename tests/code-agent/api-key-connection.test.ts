import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crmTool, startCrmStack, type CrmStack } from '../crm/support.js';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';

let s: CrmStack;
let fake: Server;
let base: string;
const seen: string[] = [];

beforeAll(async () => {
  fake = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    res.setHeader('content-type', 'application/json');
    if (req.url === '/v1/models' && req.headers.authorization === 'Bearer good-key')
      return void res.end(JSON.stringify({ items: [{ id: 'model-a', displayName: 'A' }] }));
    res.statusCode = 401;
    res.end(JSON.stringify({ error: { code: 'unauthorized' } }));
  });
  await new Promise<void>((r) => fake.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  s = await startCrmStack();
});
afterAll(async () => {
  await s?.close();
  fake?.close();
});

const create = (body: Record<string, unknown>) =>
  http(s.r.stack.url, 'POST', '/api/connections', {
    token: s.admin,
    body: { type: 'api_key', auth_mode: 'api_key', ...body },
  });
const count = async () =>
  (await query(s.r.stack.db.url, `select count(*)::int as n from crm_connections where type = 'api_key'`))[0]!
    .n as number;

describe('api_key connection for the code agent', () => {
  it('saves a shared connection, seals and masks the key, and tests GET /v1/models', async () => {
    const res = await create({ name: 'code_agent', config: { api_key: 'good-key', api_base_url: base } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      type: 'api_key',
      config: { api_key: '********', api_base_url: base, scope: 'shared' },
      connection_test: { status: 'passed' },
    });
    expect(seen).toContain('GET /v1/models Bearer good-key');
    const rows = await query(s.r.stack.db.url, `select secrets_sealed from crm_connections where name = 'code_agent'`);
    expect(String(rows[0]!.secrets_sealed)).not.toContain('good-key');
    const got = await http(s.r.stack.url, 'GET', '/api/connections/code_agent', { token: s.admin });
    expect(got.body.data.config.api_key).toBe('********');
  });

  it('records a failed test when the provider refuses the key', async () => {
    const res = await create({ name: 'code_agent_bad', config: { api_key: 'bad-key', api_base_url: base } });
    expect(res.status).toBe(201);
    expect(res.body.data.connection_test).toMatchObject({ status: 'failed' });
    const patched = await http(s.r.stack.url, 'PATCH', '/api/connections/code_agent_bad', {
      token: s.admin,
      body: { config: { api_key: 'good-key' } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data.connection_test).toMatchObject({ status: 'passed' });
  });

  it('refuses personal scope, a missing key and a non-https base, saving nothing', async () => {
    const before = await count();
    for (const config of [
      { api_key: 'k', scope: 'personal' },
      { api_base_url: base },
      { api_key: 'k', api_base_url: 'ftp://example.com' },
    ]) {
      const res = await create({ name: 'refused', config });
      expect(res.status).toBe(400);
      expect(res.body.error_type).toBe('bad_request');
    }
    expect(await count()).toBe(before);
  });

  it('lists the api_key type with the default base URL', async () => {
    const res = await http(s.r.stack.url, 'GET', '/api/connections/types', { token: s.admin });
    const t = res.body.data.types.find((x: { type: string }) => x.type === 'api_key');
    expect(t.auth_modes[0].fields.find((f: { name: string }) => f.name === 'api_base_url').default).toMatch(/^https:/);
  });
  it('is never loaded where a CRM connection is expected: the CRM tool and the OAuth start answer 404', async () => {
    const made = await create({ name: 'agent_key', config: { api_key: 'good-key', api_base_url: base } });
    expect(made.status).toBe(201);
    const before = seen.length;
    const read = await crmTool(s, s.admin, {
      action: 'get_record',
      connection_name: 'agent_key',
      record_kind: 'Account',
      record_id: '001000000000001',
      fields: ['Name'],
    });
    expect(read.status).toBe(404);
    expect(read.body.error_type).toBe('not_found');
    expect(read.body.payload).toMatchObject({ reason: 'connection_type_mismatch', expected_type: 'crm' });
    const auth = await http(s.r.stack.url, 'GET', '/api/connections/agent_key/oauth/authorize', { token: s.admin });
    expect(auth.status).toBe(404);
    expect(auth.body.payload).toMatchObject({ reason: 'connection_type_mismatch' });
    // Nothing was sent anywhere with the key, and the generic routes still see the row.
    expect(seen.length).toBe(before);
    const got = await http(s.r.stack.url, 'GET', '/api/connections/agent_key', { token: s.admin });
    expect(got.status).toBe(200);
    const del = await http(s.r.stack.url, 'DELETE', '/api/connections/agent_key', { token: s.admin });
    expect(del.status).toBe(200);
  });
});

/** crm_connector's bounded reads and writes through POST /api/tool_call, as people and as an agent (gsk_ token). */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createJwtConnection, crmTool, seedContacts, startCrmStack, SURVIVOR, type CrmStack } from './support.js';

let s: CrmStack;
let agent: string;
const DATA = '/services/data/v62.0';
const calls = (method?: string) => s.crm.calls.filter((c) => !method || c.method === method);

beforeAll(async () => {
  s = await startCrmStack();
  await createJwtConnection(s);
  agent = await s.r.agent('bot-crm', 'thread-crm');
});
afterAll(async () => s?.close());
beforeEach(() => {
  seedContacts(s.crm);
  // Seven more contacts: ten in all, for the row cap.
  for (let i = 4; i <= 10; i++) {
    s.crm.records.set(`0030000000000${String(i).padStart(2, '0')}AAA`, {
      type: 'Contact',
      fields: { LastName: `Extra ${i}` },
      lastModified: '2026-10-05T10:00:00.000+0000',
      deleted: false,
    });
  }
  s.crm.queryPageSize = 3;
  s.crm.calls = [];
  s.crm.counts.patch = 0;
});

describe('query', () => {
  it('stops reading pages at the row cap and says the result is truncated', async () => {
    const res = await crmTool(s, s.r.tokens.rita, {
      action: 'query',
      soql: 'SELECT Id, LastName FROM Contact',
      max_rows: 4,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.result).toMatchObject({ total_size: 10, returned: 4, truncated: true, max_rows: 4 });
    expect(res.body.data.result.records).toHaveLength(4);
    // Two pages of three hold the four rows; the remaining pages are never fetched.
    expect(calls().map((c) => c.path.replace(/\?.*/, ''))).toEqual([
      `${DATA}/query`,
      expect.stringMatching(new RegExp(`^${DATA}/query/01g\\w+-3$`)),
    ]);
  });

  it('reads every page when the result fits (agents may read too)', async () => {
    const res = await crmTool(s, agent, { action: 'query', soql: 'SELECT Id FROM Contact' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.result).toMatchObject({ total_size: 10, returned: 10, truncated: false, max_rows: 50 });
    expect(calls('GET')).toHaveLength(4);
  });

  it.each([
    ['a statement other than SELECT', { soql: "UPDATE Contact SET LastName = 'x'" }, 'body.arguments.soql'],
    ['more rows than the cap', { soql: 'SELECT Id FROM Contact', max_rows: 201 }, 'body.arguments.max_rows'],
    [
      'an over-long query',
      { soql: `SELECT Id FROM Contact WHERE LastName = '${'x'.repeat(4_000)}'` },
      'body.arguments.soql',
    ],
  ])('refuses %s with 400 naming the field and no CRM call', async (_what, args, field) => {
    const res = await crmTool(s, s.r.tokens.rita, { action: 'query', ...args });
    expect(res.status, res.text).toBe(400);
    expect(res.body.payload.fields.map((f: { field: string }) => f.field)).toContain(field);
    expect(calls()).toHaveLength(0);
  });
});

describe('get_record', () => {
  it('reads the named fields with one REST call', async () => {
    const res = await crmTool(s, agent, {
      action: 'get_record',
      record_kind: 'Contact',
      record_id: SURVIVOR,
      fields: ['LastName', 'Phone'],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.result).toEqual({
      id: SURVIVOR,
      last_modified: expect.any(String),
      fields: { LastName: 'Lovelace', Phone: '111' },
    });
    expect(calls()).toEqual([
      {
        method: 'GET',
        path: `${DATA}/sobjects/Contact/${SURVIVOR}?fields=${encodeURIComponent('Id,LastModifiedDate,LastName,Phone')}`,
      },
    ]);
  });

  it('refuses more than 50 fields before calling the CRM', async () => {
    const fields = Array.from({ length: 51 }, (_, i) => `F${i}`);
    const res = await crmTool(s, s.r.tokens.rita, {
      action: 'get_record',
      record_kind: 'Contact',
      record_id: SURVIVOR,
      fields,
    });
    expect(res.status).toBe(400);
    expect(res.body.payload.fields[0].field).toBe('body.arguments.fields');
    expect(calls()).toHaveLength(0);
  });
});

describe('update_record', () => {
  const update = (token: string, args: Record<string, unknown>) =>
    crmTool(s, token, { action: 'update_record', record_kind: 'Contact', record_id: SURVIVOR, ...args });

  it('writes the fields with one PATCH for a person with manage_all_connections', async () => {
    const res = await update(s.admin, { fields: { Phone: '999', Email: 'ada@lovelace.example' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.result).toEqual({
      updated: true,
      record_kind: 'Contact',
      record_id: SURVIVOR,
      fields: ['Phone', 'Email'],
    });
    expect(calls()).toEqual([{ method: 'PATCH', path: `${DATA}/sobjects/Contact/${SURVIVOR}` }]);
    expect(s.crm.records.get(SURVIVOR)!.fields).toMatchObject({
      Phone: '999',
      Email: 'ada@lovelace.example',
      LastName: 'Lovelace',
    });
  });

  it('refuses agents (a governed action: Action Review) and people who may only view connections', async () => {
    const byAgent = await update(agent, { fields: { Phone: '999' } });
    expect(byAgent.status).toBe(403);
    expect(byAgent.body.payload).toMatchObject({ code: 'governed_action', use_tool: 'action_review' });
    expect(byAgent.body.error).toMatch(/action_review/);
    const byViewer = await update(s.r.tokens.rita, { fields: { Phone: '999' } });
    expect(byViewer.status).toBe(403);
    expect(byViewer.body.payload.required_permission).toBe('manage_all_connections');
    expect(calls()).toHaveLength(0);
    expect(s.crm.records.get(SURVIVOR)!.fields.Phone).toBe('111');
  });

  const many = (n: number, value = 'x') =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`Field_${i}`, value]));
  it.each([
    ['an unknown kind', { record_kind: 'User', fields: { IsActive: false } }, 'body.arguments.record_kind'],
    ['no fields', { fields: {} }, 'body.arguments.fields'],
    ['more than 50 fields', { fields: many(51) }, 'body.arguments.fields'],
    [
      'a value over 32,000 characters',
      { fields: { Description: 'd'.repeat(32_001) } },
      'body.arguments.fields.Description',
    ],
    ['more than 100,000 characters in all', { fields: many(4, 'v'.repeat(30_000)) }, 'body.arguments.fields'],
    ['a field name that is not an API name', { fields: { 'Last Name': 'x' } }, 'body.arguments.fields.Last Name'],
  ])('refuses %s with 400 naming the field and no CRM call', async (_what, args, field) => {
    const res = await update(s.admin, args);
    expect(res.status, res.text).toBe(400);
    expect(res.body.payload.fields.map((f: { field: string }) => f.field)).toContain(field);
    expect(calls()).toHaveLength(0);
    expect(s.crm.counts.patch).toBe(0);
  });
});

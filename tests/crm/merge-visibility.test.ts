/**
 * Merge approvals follow Action Review's visibility (an approval is its crm.merge.v1 proposal), the
 * crm_connector tool asks for the same permissions as the REST routes, and a refused execute never
 * touches the approval's lifetime guard.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { crmMergeStateQuery } from '../../workflows/crm-merge-definitions.js';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import {
  APPROVALS,
  createJwtConnection,
  crmTool,
  requestAndApprove,
  resetFakeCrm,
  selection,
  startCrmStack,
  type CrmStack,
} from './support.js';

let s: CrmStack;
let bob: string;
const get = (path: string, token: string) => http(s.r.stack.url, 'GET', path, { token });
const post = (path: string, token: string, body: unknown = {}) => http(s.r.stack.url, 'POST', path, { token, body });
const phase = async (id: string) =>
  (await s.r.stack.api.deps.temporal.workflow.getHandle(`crm-merge/${id}`).query(crmMergeStateQuery)).phase;
const listed = async (token: string) =>
  ((await get(APPROVALS, token)).body.data.approvals as Array<{ approval_id: string }>).map((a) => a.approval_id);
const strip = (body: Record<string, unknown>) => ({ ...body, request_id: undefined, error: undefined });

beforeAll(async () => {
  s = await startCrmStack();
  await createJwtConnection(s);
  bob = await s.r.idp.sign({ sub: 'bob', name: 'Bob Owner', roles: ['reviewer'] }, { expiresIn: '1h' });
});
afterAll(async () => s?.close());
beforeEach(() => resetFakeCrm(s.crm));

describe('an approval raised by an agent in a private thread', () => {
  it('is hidden from other people exactly like an unknown id, on every route, and its lifetime stays unclaimed', async () => {
    await query(
      s.r.stack.db.url,
      `insert into conversation_threads (id, tenant, bot_id, owner_id, visibility) values ('bob-private', 'default', 'bot-crm', 'bob', 'private')`,
    );
    const agent = await s.r.agent('bot-crm', 'bob-private');
    const raised = await crmTool(s, agent, { action: 'request_merge_approval', ...selection() });
    expect(raised.status, raised.text).toBe(200);
    const id = raised.body.data.result.approval_id as string;
    expect((await get(`/api/action-review/proposals/${id}`, s.r.tokens.rita)).status).toBe(404);

    const unknown = randomUUID();
    const ritaTries = [
      ['GET', '', undefined],
      ['POST', '/approve', {}],
      ['POST', '/reject', {}],
      ['POST', '/execute', { connection_name: 'crm_main' }],
    ] as const;
    for (const [method, suffix, body] of ritaTries) {
      const hidden = await http(s.r.stack.url, method, `${APPROVALS}/${id}${suffix}`, { token: s.r.tokens.rita, body });
      const missing = await http(s.r.stack.url, method, `${APPROVALS}/${unknown}${suffix}`, {
        token: s.r.tokens.rita,
        body,
      });
      expect([hidden.status, strip(hidden.body)], `${method} ${suffix}`).toEqual([404, strip(missing.body)]);
    }
    expect(await listed(s.r.tokens.rita)).not.toContain(id);
    expect(await phase(id)).toBe('open');

    // Its owner sees, approves and lists it.
    expect((await get(`${APPROVALS}/${id}`, bob)).status).toBe(200);
    expect(await listed(bob)).toContain(id);
    expect((await post(`${APPROVALS}/${id}/approve`, bob)).body.data.approval.status).toBe('approved');
    // Approved now, Rita still cannot execute it, and the TTL guard is not claimed by her attempt.
    expect((await post(`${APPROVALS}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' })).status).toBe(
      404,
    );
    expect(await phase(id)).toBe('open');

    // The same bot from another thread reaches it, is refused for its origin, and claims nothing.
    const elsewhere = await s.r.agent('bot-crm', 'bob-other-thread');
    const refused = await crmTool(s, elsewhere, { action: 'execute_merge', approval_id: id });
    expect(refused.status, refused.text).toBe(200);
    expect(refused.body.data.result).toMatchObject({
      success: false,
      claimed: false,
      refusal_reason: 'execution_origin_required',
    });
    expect(await phase(id)).toBe('open');
    expect(s.crm.counts.patch + s.crm.counts.soap).toBe(0);

    // From its own thread the agent executes it.
    const done = await crmTool(s, agent, { action: 'execute_merge', approval_id: id });
    expect(done.body.data.result).toMatchObject({ success: true, final_status: 'executed' });
  });
});

describe('crm_connector permissions per action, as on the REST routes', () => {
  it('execute_merge needs APPROVE_AGENT_ACTION: a developer (view_connections only) and a member are refused 403 before anything is claimed', async () => {
    const id = await requestAndApprove(s);
    const developer = await s.r.idp.sign(
      { sub: 'dev', name: 'Dee Developer', roles: ['developer'] },
      { expiresIn: '1h' },
    );
    for (const token of [developer, s.r.tokens.member]) {
      const res = await crmTool(s, token, { action: 'execute_merge', approval_id: id });
      expect([res.status, res.body.payload?.required_permission]).toEqual([403, 'APPROVE_AGENT_ACTION']);
      expect((await post(`${APPROVALS}/${id}/execute`, token, { connection_name: 'crm_main' })).status).toBe(403);
    }
    expect(await phase(id)).toBe('open');
    expect(s.crm.counts.patch + s.crm.counts.soap).toBe(0);

    // Reads keep view_connections: the developer may preview, the member may not.
    expect((await crmTool(s, developer, { action: 'preview_merge', ...selection() })).status).toBe(200);
    const memberPreview = await crmTool(s, s.r.tokens.member, { action: 'preview_merge', ...selection() });
    expect([memberPreview.status, memberPreview.body.payload?.required_permission]).toEqual([403, 'view_connections']);
  });
});

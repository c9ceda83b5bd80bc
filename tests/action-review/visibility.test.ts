import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { learning, path, propose, startReviewStack, ticket, tool, type ReviewStack } from './support.js';

let r: ReviewStack;

beforeAll(async () => {
  r = await startReviewStack();
});
afterAll(async () => {
  await r?.close();
});

const list = (token: string, qs = '') => http(r.stack.url, 'GET', `/api/action-review/proposals${qs}`, { token });
const strip = (body: Record<string, unknown>) => ({ ...body, request_id: undefined, error: undefined });

describe('hidden and other-tenant proposals answer 404 like unknown ids', () => {
  it('hides another tenant’s proposal on every read and decision', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('tenant-scoped'));
    const unknown = await http(r.stack.url, 'GET', path(randomUUID()), { token: r.tokens.foreign });
    for (const [method, suffix] of [
      ['GET', ''],
      ['GET', '/status'],
      ['POST', '/approve'],
      ['POST', '/reject'],
      ['POST', '/execute'],
      ['POST', '/approve-and-execute'],
    ] as const) {
      const res = await http(r.stack.url, method, path(id, suffix), {
        token: r.tokens.foreign,
        ...(method === 'POST' ? { body: {} } : {}),
      });
      expect(res.status, `${method} ${suffix}`).toBe(404);
      expect(strip(res.body)).toEqual(strip(unknown.body));
    }
    expect((await list(r.tokens.foreign)).body.proposals).toEqual([]);
    expect((await http(r.stack.url, 'GET', path('not-a-uuid'), { token: r.tokens.rita })).status).toBe(404);
  });

  it('hides a proposal raised in a private thread from everyone but the thread’s owner', async () => {
    await query(
      r.stack.db.url,
      `insert into conversation_threads (id, tenant, bot_id, owner_id, visibility) values ('private-1', 'default', 'bot-p', 'ravi', 'private')`,
    );
    const agent = await r.agent('bot-p', 'private-1');
    const created = await tool(r.stack.url, agent, { action: 'CREATE_PROPOSAL', ...learning(11) });
    expect(created.status).toBe(200);
    const id = created.body.data.result.proposal.proposal_id as string;
    expect((await http(r.stack.url, 'GET', path(id), { token: r.tokens.rita })).status).toBe(404);
    expect((await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.rita, body: {} })).status).toBe(
      404,
    );
    expect((await list(r.tokens.rita)).body.proposals.map((p: { proposal_id: string }) => p.proposal_id)).not.toContain(
      id,
    );
    expect((await http(r.stack.url, 'GET', path(id), { token: r.tokens.ravi })).status).toBe(200);
    expect((await list(r.tokens.ravi)).body.proposals.map((p: { proposal_id: string }) => p.proposal_id)).toContain(id);
  });
});

describe('the inbox', () => {
  it('answers the spec’s fields, filters, scopes and statements', async () => {
    const a = await propose(r.stack.url, r.tokens.rita, { ...ticket('inbox a'), requested_statement: 'statement a' });
    const b = await propose(r.stack.url, r.tokens.rita, learning(12));
    const res = await list(r.tokens.ravi, '?action_type=ticket.write.v1&status=requested');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'incomplete_reason',
      'limit',
      'offset',
      'proposals',
      'success',
      'total_count',
      'truncated',
      'visible_threads_only',
    ]);
    expect(res.body).toMatchObject({
      success: true,
      offset: 0,
      limit: 50,
      truncated: false,
      incomplete_reason: null,
      visible_threads_only: true,
    });
    const ids = res.body.proposals.map((p: { proposal_id: string }) => p.proposal_id);
    expect(ids).toContain(a);
    expect(ids).not.toContain(b);
    const row = res.body.proposals.find((p: { proposal_id: string }) => p.proposal_id === a);
    expect(row).toMatchObject({
      effective_status: 'requested',
      requested_statement: null,
      approving_is_the_action: false,
    });
    expect(row.payload).toBeUndefined();
    const full = await list(r.tokens.ravi, '?dossier_scope=full&include_statement=true&limit=1');
    expect(full.body.proposals).toHaveLength(1);
    expect(full.body.proposals[0]).toMatchObject({
      proposal_id: b,
      requested_statement: null,
      payload: expect.any(Object),
    });
    const withStatement = (await list(r.tokens.ravi, '?include_statement=true')).body.proposals.find(
      (p: { proposal_id: string }) => p.proposal_id === a,
    );
    expect(withStatement.requested_statement).toBe('statement a');
    const detail = await http(
      r.stack.url,
      'GET',
      path(a, '?include_events=false&view=summary&include_package_signability=true'),
      { token: r.tokens.ravi },
    );
    expect(detail.body.data.events).toBeUndefined();
    expect(detail.body.data.payload).toBeUndefined();
    expect(detail.body.data).toMatchObject({
      requested_statement: null,
      viewer_can_sign: true,
      viewer_can_apply: false,
      viewer_cannot_sign_reason: null,
    });
  });

  it('probes at most 100 subjects and names why the list is incomplete, by precedence', async () => {
    // Projection rows written directly: the list reads PostgreSQL only, so this exercises its budget without 100 workflows.
    const insert = (threadId: string | null, extra: { actionType?: string; subjectKind?: string } = {}) =>
      query(
        r.stack.db.url,
        `insert into action_review_proposals (proposal_id, tenant, action_type, status, version, payload, payload_digest, expected_effect,
           requester, requester_kind, bot_id, thread_id, subject_kind, subject_id, execution_origin, claimed, created_at, updated_at)
         values ($1, 'budget', $2, 'requested', 1, '{}', 'sha256:x', 'e', '{"kind":"agent","id":"b","tenant":"budget","label":"b","credential":"sandbox_token"}',
           'agent', 'b', $3, $4, $5, 'any', false, now(), now())`,
        [
          randomUUID(),
          extra.actionType ?? 'learning.adopt.v1',
          threadId,
          extra.subjectKind ?? null,
          extra.subjectKind ? 's-1' : null,
        ],
      );
    const budgetToken = await r.idp.sign({ sub: 'bea', name: 'Bea', tenant: 'budget', roles: ['reviewer'] });
    await insert(null, { actionType: 'retired.action.v0' });
    await insert(null, { subjectKind: 'retired_subject' });
    const partial = await list(budgetToken);
    expect(partial.body).toMatchObject({ total_count: 0, truncated: false, incomplete_reason: 'handler_unavailable' });
    for (let i = 0; i < 105; i++) {
      await query(
        r.stack.db.url,
        `insert into conversation_threads (id, tenant, visibility) values ($1, 'budget', 'tenant')`,
        [`budget-${i}`],
      );
      await insert(`budget-${i}`);
    }
    const res = await list(budgetToken, '?limit=200');
    expect(res.body).toMatchObject({ truncated: true, incomplete_reason: 'probe_budget', total_count: 100 });
    expect(res.body.proposals).toHaveLength(100);
  });
});

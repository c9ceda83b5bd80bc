import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { learning, path, SERVICE_TOKEN, startReviewStack, ticket, tool, waitFor, type ReviewStack } from './support.js';

let r: ReviewStack;

beforeAll(async () => {
  r = await startReviewStack({ LOCAL_CLI_ALLOWED_COMMANDS: 'echo' });
});
afterAll(async () => {
  await r?.close();
});

const messages = (threadId: string) =>
  query<{ content: string; metadata: Record<string, unknown> }>(
    r.stack.db.url,
    'select content, metadata from conversation_messages where thread_id = $1',
    [threadId],
  );

describe('agents propose through the action_review tool', () => {
  it('creates a proposal bound to the agent’s bot and thread, and polls its status', async () => {
    const agent = await r.agent('bot-sales', 'thread-a1');
    const created = await tool(r.stack.url, agent, {
      action: 'CREATE_PROPOSAL',
      ...ticket('from an agent'),
      requested_statement: 'The user asked for it.',
    });
    expect(created.status).toBe(200);
    const proposal = created.body.data.result.proposal;
    expect(proposal).toMatchObject({
      requester_kind: 'agent',
      bot_id: 'bot-sales',
      thread_id: 'thread-a1',
      effective_status: 'requested',
    });
    expect(created.body.data.result.handback).toBe('conversation');
    const polled = await tool(r.stack.url, agent, { action: 'GET_REQUEST_STATUS', proposal_id: proposal.proposal_id });
    expect(polled.body.data.result.proposal).toMatchObject({
      proposal_id: proposal.proposal_id,
      effective_status: 'requested',
    });
    const otherBot = await r.agent('bot-other', 'thread-z');
    const hidden = await tool(r.stack.url, otherBot, {
      action: 'GET_REQUEST_STATUS',
      proposal_id: proposal.proposal_id,
    });
    expect(hidden.status).toBe(404);
  });

  it('hands the decision and its reason back into the thread that raised it, once', async () => {
    const agent = await r.agent('bot-sales', 'thread-a2');
    const created = await tool(r.stack.url, agent, { action: 'CREATE_PROPOSAL', ...learning(2) });
    const id = created.body.data.result.proposal.proposal_id as string;
    const res = await http(r.stack.url, 'POST', path(id, '/reject'), {
      token: r.tokens.rita,
      body: { reason: 'we already have this rule' },
    });
    expect(res.status).toBe(200);
    const delivered = await waitFor(async () => {
      const rows = await messages('thread-a2');
      return rows.length > 0 && rows;
    }, 'the hand-back message');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.content).toContain('rejected by Rita Reviewer');
    expect(delivered[0]!.content).toContain('we already have this rule');
    expect(delivered[0]!.metadata).toMatchObject({
      kind: 'action_review_decision',
      proposal_id: id,
      decision: 'rejected',
    });
    const result = await r.stack.api.deps.temporal.workflow.getHandle(`handback/${id}`).result();
    expect(result).toMatchObject({ delivered: true });
    expect(await messages('thread-a2')).toHaveLength(1);
  });

  it('gives no hand-back to proposals raised outside a conversation', async () => {
    const created = await tool(r.stack.url, r.tokens.rita, { action: 'CREATE_PROPOSAL', ...ticket('no thread') });
    expect(created.status).toBe(200);
    expect(created.body.data.result).toMatchObject({
      handback: 'poll_request_status',
      proposal: { thread_id: null, requester_kind: 'person' },
    });
    const id = created.body.data.result.proposal.proposal_id as string;
    await http(r.stack.url, 'POST', path(id, '/reject'), { token: r.tokens.ravi, body: {} });
    expect(await query(r.stack.db.url, 'select * from action_review_handbacks where proposal_id = $1', [id])).toEqual(
      [],
    );
    const detail = await http(r.stack.url, 'GET', path(id), { token: r.tokens.ravi });
    expect(detail.body.data.handback).toBeNull();
  });
});

describe('execution origin', () => {
  it('refuses, unclaimed, an execute from outside the proposal’s thread; the thread itself executes once', async () => {
    const inThread = await r.agent('bot-ops', 'thread-o1');
    const created = await tool(r.stack.url, inThread, {
      action: 'CREATE_PROPOSAL',
      action_type: 'prover.request_finding_evidence.v1',
      payload: { finding_id: 'F-1', evidence_request: 'Attach the query plan.' },
      expected_effect: 'Evidence is requested for F-1.',
    });
    const id = created.body.data.result.proposal.proposal_id as string;
    expect((await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.rita, body: {} })).status).toBe(
      200,
    );

    const elsewhere = await r.agent('bot-ops', 'thread-o2');
    const refused = await tool(r.stack.url, elsewhere, { action: 'EXECUTE_PROPOSAL', proposal_id: id });
    expect(refused.body.data.result).toMatchObject({
      success: false,
      claimed: false,
      refusal_reason: 'execution_origin_required',
    });
    const bySystem = await http(r.stack.url, 'POST', path(id, '/execute'), {
      headers: { 'x-platform-service-token': SERVICE_TOKEN },
    });
    expect(bySystem.body).toMatchObject({
      success: false,
      claimed: false,
      refusal_reason: 'execution_origin_required',
    });
    expect(
      await query(r.stack.db.url, 'select claimed from action_review_proposals where proposal_id = $1', [id]),
    ).toEqual([{ claimed: false }]);

    const done = await tool(r.stack.url, inThread, { action: 'EXECUTE_PROPOSAL', proposal_id: id });
    expect(done.body.data.result).toMatchObject({
      success: true,
      claimed: true,
      final_status: 'executed',
      replayed: false,
    });
    const repeat = await tool(r.stack.url, inThread, { action: 'EXECUTE_PROPOSAL', proposal_id: id });
    expect(repeat.body.data.result).toMatchObject({ claimed: true, final_status: 'executed', replayed: true });
    expect(
      await query(r.stack.db.url, 'select count(*)::int as n from prover_decisions where proposal_id = $1', [id]),
    ).toEqual([{ n: 1 }]);
  });

  it('keeps an agent run to its own thread: other threads’ proposals are hidden, and it names only its thread as a subject', async () => {
    const own = await r.agent('bot-scope', 'thread-s1');
    const created = await tool(r.stack.url, own, {
      action: 'CREATE_PROPOSAL',
      action_type: 'prover.request_finding_evidence.v1',
      payload: { finding_id: 'F-9', evidence_request: 'Attach logs.' },
      expected_effect: 'Evidence is requested for F-9.',
    });
    const id = created.body.data.result.proposal.proposal_id as string;
    const other = await r.agent('bot-scope', 'thread-s2');
    const hidden = await tool(r.stack.url, other, { action: 'GET_REQUEST_STATUS', proposal_id: id });
    expect(hidden.status).toBe(404);
    expect((await tool(r.stack.url, own, { action: 'GET_REQUEST_STATUS', proposal_id: id })).status).toBe(200);
    // The inbox is for people (APPROVE_AGENT_ACTION); agents poll their own proposals.
    expect((await http(r.stack.url, 'GET', '/api/action-review/proposals', { token: own })).status).toBe(403);
    const foreignSubject = await tool(r.stack.url, other, {
      action: 'CREATE_PROPOSAL',
      action_type: 'prover.request_finding_evidence.v1',
      payload: { finding_id: 'F-10', evidence_request: 'x' },
      expected_effect: 'x',
      subject: { kind: 'conversation_thread', id: 'thread-s1' },
    });
    expect(foreignSubject.status).toBe(404);
  });

  it('lets a registered agent call only the tools of its tool groups', async () => {
    const eve = await r.agent('eve', 'thread-e1');
    const res = await http(r.stack.url, 'POST', '/api/tool_call', {
      token: eve,
      body: { tool: 'crm_connector', arguments: { action: 'get_record' } },
    });
    expect(res.status).toBe(403);
    expect(res.body.payload).toMatchObject({ reason: 'tool_not_in_agent_groups', tool: 'crm_connector' });
  });

  it('refuses unknown tools, bad arguments and callers the tool does not accept', async () => {
    const agent = await r.agent('bot-ops', 'thread-o3');
    expect(
      (await http(r.stack.url, 'POST', '/api/tool_call', { token: agent, body: { tool: 'nope', arguments: {} } }))
        .status,
    ).toBe(404);
    const bad = await tool(r.stack.url, agent, { action: 'CREATE_PROPOSAL', action_type: 'ticket.write.v1' });
    expect(bad.status).toBe(400);
    const system = await http(r.stack.url, 'POST', '/api/tool_call', {
      headers: { 'x-platform-service-token': SERVICE_TOKEN },
      body: { tool: 'action_review', arguments: { action: 'GET_REQUEST_STATUS', proposal_id: 'x' } },
    });
    expect(system.status).toBe(403);
  });
});

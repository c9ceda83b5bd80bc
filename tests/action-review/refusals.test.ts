import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import {
  learning,
  path,
  propose,
  recordHistory,
  SERVICE_TOKEN,
  startReviewStack,
  ticket,
  tool,
  type ReviewStack,
} from './support.js';

let r: ReviewStack;

beforeAll(async () => {
  r = await startReviewStack({ ACTION_REVIEW_MAX_PROPOSAL_BYTES: '4000' });
});
afterAll(async () => {
  await r?.close();
});

const events = async (id: string) =>
  (
    await query<{ type: string }>(
      r.stack.db.url,
      'select type from action_review_events where proposal_id = $1 order by seq',
      [id],
    )
  ).map((e) => e.type);

describe('person-only decisions', () => {
  it('refuses an agent, the system identity, an app-only token and a person without the permission with 403, recording nothing', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('who may decide'));
    const agent = await r.agent('bot-1', 'thread-decide');
    const attempts = [
      { token: agent },
      { headers: { 'x-platform-service-token': SERVICE_TOKEN } },
      { token: r.tokens.app },
      { token: r.tokens.member },
    ];
    for (const kind of ['approve', 'reject', 'approve-and-execute']) {
      for (const auth of attempts) {
        const res = await http(r.stack.url, 'POST', path(id, `/${kind}`), { ...auth, body: {} });
        expect(res.status, `${kind} ${JSON.stringify(auth)}`).toBe(403);
        expect(res.body.error_type).toBe('forbidden');
      }
    }
    expect(await events(id)).toEqual(['proposed']);
  });

  it("accepts a person's own PAT and attributes the decision to its owner", async () => {
    const pat = await http(r.stack.url, 'POST', '/api/auth/pats', { token: r.tokens.ravi, body: { name: 'inbox' } });
    expect(pat.status).toBe(201);
    const id = await propose(r.stack.url, r.tokens.rita, ticket('decided with a PAT'));
    const res = await http(r.stack.url, 'POST', path(id, '/reject'), {
      token: pat.body.data.token,
      body: { reason: 'duplicate of ISSUE-9' },
    });
    expect(res.status).toBe(200);
    expect(res.body.proposal).toMatchObject({
      status: 'rejected',
      decided_by: 'ravi',
      decided_by_label: 'Ravi Reviewer',
      decision_reason: 'duplicate of ISSUE-9',
    });
    await recordHistory(r.stack.api.deps.temporal, `action-review/${id}`, 'action-review-reject');
  });
});

describe('decision context', () => {
  it('answers 409 already_decided once decided, and execute on a rejected proposal is refused unclaimed', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('decided twice'));
    expect((await http(r.stack.url, 'POST', path(id, '/reject'), { token: r.tokens.ravi, body: {} })).status).toBe(200);
    for (const kind of ['approve', 'reject']) {
      const again = await http(r.stack.url, 'POST', path(id, `/${kind}`), { token: r.tokens.rita, body: {} });
      expect(again.status).toBe(409);
      expect(again.body.payload).toMatchObject({ code: 'already_decided', decided: false });
    }
    const combined = await http(r.stack.url, 'POST', path(id, '/approve-and-execute'), {
      token: r.tokens.rita,
      body: {},
    });
    expect(combined.status).toBe(200);
    expect(combined.body).toMatchObject({
      success: false,
      decided: false,
      refusal_reason: 'already_decided',
      execution_refusal_reason: 'already_decided',
      execution_refusal_detail: expect.any(String),
      claimed: false,
    });
    const exec = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.rita });
    expect(exec.body).toMatchObject({
      success: false,
      claimed: false,
      refusal_reason: 'not_approved',
      final_status: null,
    });
    expect(await events(id)).toEqual(['proposed', 'rejected']);
  });

  it('answers 409 decision_context_mismatch for a stale version or digest and accepts the current one', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('pinned context'));
    const detail = await http(r.stack.url, 'GET', path(id), { token: r.tokens.ravi });
    const context = detail.body.data.decision_context;
    expect(context).toEqual({ expected_version: 1, payload_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    const staleVersion = await http(r.stack.url, 'POST', path(id, '/approve'), {
      token: r.tokens.ravi,
      body: { expected_version: 2 },
    });
    expect(staleVersion.status).toBe(409);
    expect(staleVersion.body.payload.code).toBe('decision_context_mismatch');
    const staleDigest = await http(r.stack.url, 'POST', path(id, '/approve'), {
      token: r.tokens.ravi,
      body: { expected_payload_digest: 'sha256:' + '0'.repeat(64) },
    });
    expect(staleDigest.status).toBe(409);
    expect(staleDigest.body.payload.code).toBe('decision_context_mismatch');
    expect(await events(id)).toEqual(['proposed']);
    const ok = await http(r.stack.url, 'POST', path(id, '/approve'), {
      token: r.tokens.ravi,
      body: { expected_version: context.expected_version, expected_payload_digest: context.payload_digest },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.proposal.version).toBe(2);
  });
});

describe('execution and reconciliation refusals', () => {
  it('refuses execute before approval without claiming, and reconcile when nothing needs reconciling', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('too early'));
    const exec = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.ravi });
    expect(exec.status).toBe(200);
    expect(exec.body).toMatchObject({ success: false, claimed: false, refusal_reason: 'not_approved' });
    const rec = await http(r.stack.url, 'POST', path(id, '/reconcile'), {
      token: r.tokens.ravi,
      body: { final_status: 'executed' },
    });
    expect(rec.status).toBe(200);
    expect(rec.body).toMatchObject({
      resolved: false,
      refusal_reason: 'not_reconciliation_required',
      final_status: null,
    });
    const agent = await r.agent('bot-1', 'thread-x');
    const byAgent = await http(r.stack.url, 'POST', path(id, '/reconcile'), {
      token: agent,
      body: { final_status: 'executed' },
    });
    expect(byAgent.status).toBe(403);
    expect(await events(id)).toEqual(['proposed']);
  });

  it('approve-and-execute runs a non-self-applying type in one request', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, {
      action_type: 'prover.decide_improvement_docket_entry.v1',
      payload: { entry_id: 'docket-4', decision: 'accept' },
      expected_effect: 'Docket entry 4 is accepted.',
    });
    const res = await http(r.stack.url, 'POST', path(id, '/approve-and-execute'), {
      token: r.tokens.ravi,
      body: { reason: 'ship it' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      decided: true,
      claimed: true,
      final_status: 'executed',
      refusal_reason: null,
    });
    expect(
      await query(r.stack.db.url, 'select subject_id, decided_by from prover_decisions where proposal_id = $1', [id]),
    ).toEqual([{ subject_id: 'docket-4', decided_by: 'ravi' }]);
    expect(await events(id)).toEqual(['proposed', 'approved', 'execution_claimed', 'executed']);
  });
});

describe('creation limits', () => {
  it('answers 413 for a proposal whose stored form exceeds the configured size, and starts nothing', async () => {
    const big = learning(1);
    big.payload.content = 'x'.repeat(5_000);
    const res = await http(r.stack.url, 'POST', '/api/action-review/proposals', { token: r.tokens.rita, body: big });
    expect(res.status).toBe(413);
    expect(res.body.error_type).toBe('payload_too_large');
    expect(res.body.payload.limit_bytes).toBe(4000);
  });

  it('answers 400 for a payload that does not fit its action type', async () => {
    const res = await http(r.stack.url, 'POST', '/api/action-review/proposals', {
      token: r.tokens.rita,
      body: {
        action_type: 'crm.merge.v1',
        payload: { object_kind: 'Opportunity', survivor_id: 'a', loser_ids: [] },
        expected_effect: 'merge',
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.payload.fields.map((f: { field: string }) => f.field).sort()).toEqual([
      'body.payload.loser_ids',
      'body.payload.object_kind',
    ]);
  });

  it('refuses a local_cli.run.v1 command off the allow-list (empty by default) at creation: 400 command_not_allowed, nothing written', async () => {
    const count = async (table: string) =>
      Number((await query<{ n: string }>(r.stack.db.url, `select count(*) as n from ${table}`))[0]!.n);
    const before = [await count('action_review_proposals'), await count('action_review_events')];
    const run = {
      action_type: 'local_cli.run.v1',
      payload: { command: 'echo', args: ['hi'] },
      expected_effect: 'echo',
    };
    const viaRoute = await http(r.stack.url, 'POST', '/api/action-review/proposals', {
      token: r.tokens.rita,
      body: run,
    });
    const agent = await r.agent('bot-cli', 'thread-cli-refused');
    const viaTool = await tool(r.stack.url, agent, { action: 'CREATE_PROPOSAL', ...run });
    for (const res of [viaRoute, viaTool]) {
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({
        error_type: 'bad_request',
        payload: {
          code: 'command_not_allowed',
          command: 'echo',
          allowed_commands: [],
          fields: [{ field: 'body.payload.command', message: 'not on the allow-list' }],
        },
      });
    }
    expect([await count('action_review_proposals'), await count('action_review_events')]).toEqual(before);
    expect(
      await query(r.stack.db.url, 'select id from conversation_threads where id = $1', ['thread-cli-refused']),
    ).toEqual([]);
  });

  it('needs APPROVE_AGENT_ACTION to create through the route', async () => {
    const res = await http(r.stack.url, 'POST', '/api/action-review/proposals', {
      token: r.tokens.member,
      body: ticket(),
    });
    expect(res.status).toBe(403);
  });
});

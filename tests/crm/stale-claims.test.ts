/**
 * On-demand stale-claim recovery on approval-list reads, with the stale situations made for real:
 * workflows terminated through the Temporal client, an execution left hanging in the fake CRM. Only
 * the passing of time is simulated, by moving the stored deadlines (expires_at, the claim's
 * updated_at) into the past, since waiting out an effect timeout is not a test.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../action-review/support.js';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import {
  APPROVALS,
  createJwtConnection,
  requestAndApprove,
  requestMerge,
  resetFakeCrm,
  startCrmStack,
  type CrmStack,
} from './support.js';

let s: CrmStack;
const workflows = () => s.r.stack.api.deps.temporal.workflow;
const sql = (text: string, params: unknown[] = []) => query(s.r.stack.db.url, text, params);
const list = async () => {
  const res = await http(s.r.stack.url, 'GET', APPROVALS, { token: s.r.tokens.rita });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { approvals: Array<Record<string, any>>; recovered_stale_claims: number };
};
const item = (body: { approvals: Array<Record<string, any>> }, id: string) =>
  body.approvals.find((a) => a.approval_id === id)!;
const events = (id: string) =>
  query<{
    seq: number;
    type: string;
    actor: Record<string, unknown>;
    reason: string | null;
    detail: Record<string, unknown> | null;
  }>(
    s.r.stack.db.url,
    'select seq, type, actor, reason, detail from action_review_events where proposal_id = $1 order by seq',
    [id],
  );
const proposalRow = async (id: string) =>
  (
    await query<{
      status: string;
      final_status: string | null;
      version: number;
      execution_error_detail: string | null;
    }>(
      s.r.stack.db.url,
      'select status, final_status, version, execution_error_detail from action_review_proposals where proposal_id = $1',
      [id],
    )
  )[0]!;

beforeAll(async () => {
  s = await startCrmStack();
  await createJwtConnection(s);
});
afterAll(async () => s?.close());
beforeEach(() => resetFakeCrm(s.crm));

describe('an open approval whose workflow is gone', () => {
  it('is released as expired once past its lifetime, once; a running one is left to its workflow', async () => {
    const dead = await requestMerge(s);
    const alive = await requestMerge(s);
    await workflows().getHandle(`crm-merge/${dead}`).terminate('test: the approval workflow died');

    const early = await list();
    expect(early.recovered_stale_claims).toBe(0);
    expect(item(early, dead).status).toBe('awaiting_approval');

    await sql(
      `update crm_merge_approvals set expires_at = now() - interval '5 minutes' where approval_id in ($1, $2)`,
      [dead, alive],
    );
    const first = await list();
    expect(first.recovered_stale_claims).toBe(1);
    expect(item(first, dead)).toMatchObject({ status: 'expired', expired_at: expect.any(String) });
    const rows = await sql(
      'select approval_id, status, expired_at from crm_merge_approvals where approval_id in ($1, $2)',
      [dead, alive],
    );
    const byId = new Map(rows.map((r) => [r.approval_id, r]));
    expect(byId.get(dead)!.status).toBe('expired');
    // Still running: its own timer records expiry; the read only shows it as expired.
    expect(byId.get(alive)!.status).toBe('open');
    expect(item(first, alive).status).toBe('expired');
    expect((await workflows().getHandle(`crm-merge/${alive}`).describe()).status.name).toBe('RUNNING');

    const again = await list();
    expect(again.recovered_stale_claims).toBe(0);
    expect(item(again, dead).expired_at).toBe(item(first, dead).expired_at);
    // Expiry belongs to the approval; the Action Review proposal records no transition for it.
    expect((await events(dead)).map((e) => e.type)).toEqual(['proposed']);
    const approve = await http(s.r.stack.url, 'POST', `${APPROVALS}/${dead}/approve`, {
      token: s.r.tokens.ravi,
      body: {},
    });
    expect([approve.status, approve.body.payload.code]).toEqual([410, 'approval_expired']);
  });
});

describe('an execution whose workflow died mid-merge', () => {
  it('is marked reconciliation_required past the effect timeout, with one system event on the trail, never merged twice', async () => {
    const id = await requestAndApprove(s);
    s.crm.soapMode = 'hang';
    const pending = http(s.r.stack.url, 'POST', `${APPROVALS}/${id}/execute`, {
      token: s.r.tokens.rita,
      body: { connection_name: 'crm_main' },
    });
    await waitFor(
      async () => s.crm.counts.soap === 1 && (await proposalRow(id)).status === 'executing',
      'the merge call to reach the CRM',
    );
    await workflows().getHandle(`action-review/${id}`).terminate('test: the proposal workflow died mid-merge');
    // The request that was waiting on the dead workflow learns that no outcome was recorded (not a 500).
    const answered = await pending;
    expect(answered.status, answered.text).toBe(200);
    expect(answered.body).toMatchObject({
      success: false,
      claimed: true,
      final_status: null,
      refusal_reason: 'outcome_not_recorded',
    });

    // Younger than the effect timeout, a claim may still finish: the read leaves it alone.
    const early = await list();
    expect(early.recovered_stale_claims).toBe(0);
    expect(item(early, id).status).toBe('executing');

    const before = await proposalRow(id);
    const trail = await events(id);
    expect(trail.map((e) => e.type)).toEqual(['proposed', 'approved', 'execution_claimed']);
    const age = s.r.stack.config.actionReview.effectTimeoutSeconds + 120;
    await sql(
      `update action_review_proposals set updated_at = now() - make_interval(secs => $2) where proposal_id = $1`,
      [id, age],
    );

    // Two reads at once: the conditional update lets exactly one of them record the recovery.
    const [a, b] = await Promise.all([list(), list()]);
    expect(a.recovered_stale_claims + b.recovered_stale_claims).toBe(1);
    for (const body of [a, b])
      expect(item(body, id)).toMatchObject({
        status: 'reconciliation_required',
        final_status: 'reconciliation_required',
      });
    const after = await proposalRow(id);
    expect(after).toMatchObject({
      status: 'reconciliation_required',
      final_status: 'reconciliation_required',
      version: before.version + 1,
    });
    expect(after.execution_error_detail).toMatch(/stale claim.*may have happened/i);
    const recovered = (await events(id)).slice(trail.length);
    expect(recovered).toEqual([
      {
        seq: trail.at(-1)!.seq + 1,
        type: 'reconciliation_required',
        actor: expect.objectContaining({ kind: 'system', tenant: expect.any(String) }),
        reason: expect.stringMatching(/stale claim/i),
        detail: expect.objectContaining({
          recovered_by: 'crm_merge_approval_list',
          workflow_id: `action-review/${id}`,
        }),
      },
    ]);

    const third = await list();
    expect(third.recovered_stale_claims).toBe(0);
    expect(await events(id)).toHaveLength(trail.length + 1);
    const inbox = await http(s.r.stack.url, 'GET', `/api/action-review/proposals/${id}`, { token: s.r.tokens.rita });
    expect(inbox.body.data.status).toBe('reconciliation_required');
    expect(inbox.body.data.events.at(-1)).toMatchObject({
      type: 'reconciliation_required',
      actor: { kind: 'system' },
    });
    // The approval's workflow was told the outcome and ended instead of waiting out its settle time.
    expect(await workflows().getHandle(`crm-merge/${id}`).result()).toMatchObject({
      phase: 'settled',
      finalStatus: 'reconciliation_required',
    });

    // The held merge call is dropped; executing again answers the recorded outcome and calls nothing.
    s.crm.releaseHanging();
    const retry = await http(s.r.stack.url, 'POST', `${APPROVALS}/${id}/execute`, {
      token: s.r.tokens.rita,
      body: { connection_name: 'crm_main' },
    });
    expect(retry.body).toMatchObject({ final_status: 'reconciliation_required', replayed: true });
    expect([s.crm.counts.patch, s.crm.counts.soap]).toEqual([1, 1]);
  });
});

describe('reconciling a proposal recovered from a stale claim (its workflow is gone)', () => {
  /** Produces the recovered state for real: a hanging merge, its proposal workflow terminated, the claim aged, a list read. */
  async function recoveredStaleExecution(): Promise<string> {
    const id = await requestAndApprove(s);
    s.crm.soapMode = 'hang';
    const pending = http(s.r.stack.url, 'POST', `${APPROVALS}/${id}/execute`, {
      token: s.r.tokens.rita,
      body: { connection_name: 'crm_main' },
    });
    await waitFor(
      async () => s.crm.counts.soap === 1 && (await proposalRow(id)).status === 'executing',
      'the merge call to reach the CRM',
    );
    await workflows().getHandle(`action-review/${id}`).terminate('test: the proposal workflow died mid-merge');
    await pending;
    s.crm.releaseHanging();
    const age = s.r.stack.config.actionReview.effectTimeoutSeconds + 120;
    await sql(
      `update action_review_proposals set updated_at = now() - make_interval(secs => $2) where proposal_id = $1`,
      [id, age],
    );
    expect(item(await list(), id).status).toBe('reconciliation_required');
    return id;
  }
  const reconcile = (id: string, token: string, body: Record<string, unknown>) =>
    http(s.r.stack.url, 'POST', `/api/action-review/proposals/${id}/reconcile`, { token, body });

  it('resolves once in the projection, with one reconciled event naming the person; visibility and person-only unchanged', async () => {
    const id = await recoveredStaleExecution();
    const before = await proposalRow(id);
    const trail = await events(id);

    expect((await reconcile(id, s.r.tokens.foreign, { final_status: 'executed' })).status).toBe(404);
    expect((await reconcile(id, s.r.tokens.app, { final_status: 'executed' })).status).toBe(403);
    expect((await reconcile(id, await s.r.agent('bot-1', 'thread-1'), { final_status: 'executed' })).status).toBe(403);
    expect(await events(id)).toHaveLength(trail.length);

    // Two people at once: the conditional update lets exactly one resolve it.
    const [a, b] = await Promise.all([
      reconcile(id, s.r.tokens.rita, { final_status: 'executed', note: 'The losers are gone in the CRM.' }),
      reconcile(id, s.r.tokens.ravi, { final_status: 'not_applied' }),
    ]);
    for (const res of [a, b]) expect(res.status, res.text).toBe(200);
    const [won, lost] = a.body.resolved ? [a, b] : [b, a];
    expect(lost.body).toMatchObject({ resolved: false, refusal_reason: 'not_reconciliation_required' });
    expect(won.body).toMatchObject({ resolved: true, refusal_reason: null, proposal: { status: 'resolved' } });
    expect(Object.keys(won.body).sort()).toEqual(['final_status', 'proposal', 'refusal_reason', 'resolved']);

    const after = await proposalRow(id);
    expect(after).toMatchObject({
      status: 'resolved',
      final_status: won.body.final_status,
      version: before.version + 1,
    });
    const added = (await events(id)).slice(trail.length);
    expect(added).toEqual([
      {
        seq: trail.at(-1)!.seq + 1,
        type: 'reconciled',
        actor: expect.objectContaining({ kind: 'person', id: won === a ? 'rita' : 'ravi' }),
        reason: won === a ? 'The losers are gone in the CRM.' : null,
        detail: { final_status: won.body.final_status },
      },
    ]);
    expect(won.body.proposal.events.at(-1)).toMatchObject({ type: 'reconciled', actor: { kind: 'person' } });
    const again = await reconcile(id, s.r.tokens.rita, { final_status: 'executed' });
    expect(again.body).toMatchObject({ resolved: false, refusal_reason: 'not_reconciliation_required' });
    expect(await events(id)).toHaveLength(trail.length + 1);
    expect(item(await list(), id).status).toBe('resolved');
  });
});

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { recordHistory, waitFor } from '../action-review/support.js';
import {
  APPROVALS,
  createJwtConnection,
  LOSER_A,
  LOSER_B,
  requestAndApprove as approveNew,
  requestMerge,
  resetFakeCrm,
  selection,
  startCrmStack,
  SURVIVOR,
  type CrmStack,
} from './support.js';

let s: CrmStack;
const logLines: string[] = [];
const post = (path: string, token: string, body: unknown = {}) => http(s.r.stack.url, 'POST', path, { token, body });
const approvals = APPROVALS;
const requestAndApprove = () => approveNew(s);

beforeAll(async () => {
  s = await startCrmStack({}, logLines);
  await createJwtConnection(s);
});
afterAll(async () => s?.close());
beforeEach(() => resetFakeCrm(s.crm));

describe('merge preview', () => {
  it('projects the survivor per policy with a digest and writes nothing', async () => {
    const res = await post('/api/crm/merge/preview', s.r.tokens.rita, selection());
    expect(res.status, res.text).toBe(200);
    const p = res.body.data;
    expect(Object.keys(p.projected_survivor)).toEqual(['LastName', 'Email', 'Phone']);
    expect(p.projected_survivor).toEqual({ LastName: 'Lovelace', Email: 'ada@example.com', Phone: '222' });
    expect(p.field_sources).toEqual({ LastName: SURVIVOR, Email: LOSER_A, Phone: LOSER_A });
    expect(p.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(s.crm.counts.patch + s.crm.counts.soap).toBe(0);
    s.crm.touch(LOSER_B, 'LastName', 'Changed');
    const again = await post('/api/crm/merge/preview', s.r.tokens.rita, selection());
    expect(again.body.data.digest).not.toBe(p.digest);
  });

  it.each([
    [{ record_kind: 'Opportunity' }, 'mergeable_kinds'],
    [{ survivor_id: undefined }, 'one_survivor'],
    [{ loser_ids: [LOSER_A, LOSER_B, '003000000000004AAA'] }, 'max_two_losers'],
    [{ loser_ids: [LOSER_A, LOSER_A] }, 'distinct_records'],
    [{ loser_ids: [SURVIVOR] }, 'distinct_records'],
  ])('refuses %j naming the rule %s', async (change, rule) => {
    const res = await post('/api/crm/merge/preview', s.r.tokens.rita, { ...selection(), ...change });
    expect(res.status).toBe(400);
    expect(res.body.payload).toMatchObject({ code: 'merge_rule_violated', rule });
  });

  it('refuses when merges are not enabled on the connection', async () => {
    await createJwtConnection(s, 'crm_nomerge', { merge_enabled: 'false', merge_survivorship_policy: undefined });
    const res = await post('/api/crm/merge/preview', s.r.tokens.rita, selection('crm_nomerge'));
    expect(res.status).toBe(409);
    expect(res.body.payload).toMatchObject({ code: 'merge_not_enabled', rule: 'merge_enabled' });
  });
});

describe('merge approval lifecycle', () => {
  it('requests, shows in Action Review, approves (people only), executes once with the bound connection', async () => {
    const preview = await post('/api/crm/merge/preview', s.r.tokens.rita, selection());
    const stale = await post(approvals, s.r.tokens.rita, {
      ...selection(),
      expected_digest: 'sha256:' + '0'.repeat(64),
    });
    expect(stale.status).toBe(409);
    expect(stale.body.payload.code).toBe('stale_digest');

    const req = await post(approvals, s.r.tokens.rita, {
      ...selection(),
      expected_digest: preview.body.data.digest,
      ttl_seconds: 10 ** 7,
    });
    expect(req.status, req.text).toBe(201);
    const id = req.body.data.approval_id as string;
    expect(req.body.data.ttl_seconds).toBe(86_400);
    expect(req.body.data.digest).toBe(preview.body.data.digest);
    expect(Date.parse(req.body.data.expires_at) - Date.now()).toBeGreaterThan(86_000_000);
    const inbox = await http(s.r.stack.url, 'GET', `/api/action-review/proposals/${id}`, { token: s.r.tokens.rita });
    expect(inbox.body.data).toMatchObject({ action_type: 'crm.merge.v1', status: 'requested' });

    // Refused before anything is claimed, answered as Action Review's execute answers: 200, success false.
    const early = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' });
    expect([early.status, early.body.success, early.body.claimed, early.body.refusal_reason]).toEqual([
      200,
      false,
      false,
      'not_approved',
    ]);
    expect((await post(`${approvals}/${id}/approve`, s.r.tokens.app)).status).toBe(403);
    const agent = await s.r.agent('bot-1', 'thread-1');
    expect((await post(`${approvals}/${id}/approve`, agent)).status).toBe(403);
    expect((await post(`${approvals}/${id}/approve`, s.r.tokens.ravi)).body.data.approval.status).toBe('approved');

    const wrong = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_other' });
    expect([wrong.status, wrong.body.success, wrong.body.claimed, wrong.body.refusal_reason]).toEqual([
      200,
      false,
      false,
      'connection_mismatch',
    ]);
    expect(wrong.body.refusal_detail).toContain('crm_main');

    const done = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ success: true, final_status: 'executed', replayed: false });
    expect(done.body.execution_result).toMatchObject({
      merged_record_ids: [LOSER_A, LOSER_B],
      fields_written: { Email: 'ada@example.com', Phone: '222' },
    });
    expect(done.body.approval.status).toBe('merged');
    expect(s.crm.records.get(SURVIVOR)!.fields).toMatchObject({
      Email: 'ada@example.com',
      Phone: '222',
      LastName: 'Lovelace',
    });
    const gone = await post('/api/crm/merge/preview', s.r.tokens.rita, selection());
    expect(gone.body.payload.code).toBe('ENTITY_IS_DELETED');

    const twice = await post(`${approvals}/${id}/execute`, s.r.tokens.ravi, { connection_name: 'crm_main' });
    expect(twice.body).toMatchObject({ final_status: 'executed', replayed: true });
    expect(s.crm.counts.soap).toBe(1);
    expect(s.crm.counts.patch).toBe(1);

    const handle = s.r.stack.api.deps.temporal.workflow.getHandle(`crm-merge/${id}`);
    expect(await handle.result()).toMatchObject({ phase: 'settled', finalStatus: 'executed' });
    await recordHistory(s.r.stack.api.deps.temporal, `crm-merge/${id}`, 'crm-merge-approved-executed');
    const list = await http(s.r.stack.url, 'GET', approvals, { token: s.r.tokens.rita });
    expect(list.body.data.approvals.find((a: { approval_id: string }) => a.approval_id === id)).toMatchObject({
      status: 'merged',
    });
  });

  it('refuses records changed after the preview and writes nothing', async () => {
    const id = await requestAndApprove();
    s.crm.touch(LOSER_A, 'Email', 'new@example.com');
    const res = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' });
    expect(res.body).toMatchObject({ success: false, final_status: 'not_applied', refusal_reason: 'stale_digest' });
    expect(s.crm.counts.patch + s.crm.counts.soap).toBe(0);
    expect(s.crm.records.get(LOSER_A)!.deleted).toBe(false);
  });

  it('a crash between the write and the merge result is reconciled, never repeated', async () => {
    const id = await requestAndApprove();
    s.crm.soapMode = 'apply_then_drop';
    const res = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' });
    expect(res.body).toMatchObject({ success: false, claimed: true, final_status: 'reconciliation_required' });
    s.crm.soapMode = 'ok';
    const again = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' });
    expect(again.body).toMatchObject({ final_status: 'reconciliation_required', replayed: true });
    expect(s.crm.counts.soap).toBe(1);
    const rows = await query(s.r.stack.db.url, `select status from action_review_proposals where proposal_id = $1`, [
      id,
    ]);
    expect(rows[0]!.status).toBe('reconciliation_required');
    const detail = await waitFor(async () => {
      const d = await http(s.r.stack.url, 'GET', `${approvals}/${id}`, { token: s.r.tokens.rita });
      return d.body.data.approval.status === 'reconciliation_required' && d.body.data.approval;
    }, 'the approval to show reconciliation_required');
    expect(detail.execution_error_detail).toEqual(expect.any(String));
  });

  it('a gateway 504 after the CRM merged, with no PATCH before it, is reconciliation_required, never "nothing was written"', async () => {
    // The survivor already holds the policy's values: the merge call is the only write.
    s.crm.records.get(SURVIVOR)!.fields = { LastName: 'Lovelace', Email: 'ada@example.com', Phone: '222' };
    const id = await requestAndApprove();
    s.crm.soapMode = 'apply_then_504';
    const res = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' });
    expect(res.body).toMatchObject({
      success: false,
      claimed: true,
      final_status: 'reconciliation_required',
      refusal_reason: null,
    });
    expect([s.crm.counts.patch, s.crm.counts.soap, s.crm.records.get(LOSER_A)!.deleted]).toEqual([0, 1, true]);
    // Classified for people (status and code, an error_id); the gateway's page goes to the log only.
    expect(res.body.error_detail).toMatch(/HTTP 504 HTTP_504.*may have happened.*\(error_id [0-9a-f-]{36}\)$/);
    expect(JSON.stringify(res.body)).not.toContain('secret-upstream-detail');
    const errorId = /error_id ([0-9a-f-]{36})\)$/.exec(res.body.error_detail)![1]!;
    expect(logLines.find((l) => l.includes(errorId) && l.includes('secret-upstream-detail'))).toBeDefined();
    const again = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' });
    expect(again.body).toMatchObject({ final_status: 'reconciliation_required', replayed: true });
    expect(s.crm.counts.soap).toBe(1);
  });
});

describe('merge rejection', () => {
  it('people reject through the CRM route; the proposal is rejected, executing is refused, nothing is written', async () => {
    const id = await requestMerge(s);
    const reject = (token: string, body: unknown = {}) => post(`${approvals}/${id}/reject`, token, body);
    const agent = await s.r.agent('bot-1', 'thread-1');
    for (const token of [agent, s.r.tokens.app, s.r.tokens.member]) expect((await reject(token)).status).toBe(403);

    const res = await reject(s.r.tokens.ravi, { reason: 'different people' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.approval).toMatchObject({
      status: 'rejected',
      approved_by: null,
      rejected_by: { id: 'ravi', kind: 'person' },
      decision_reason: 'different people',
    });
    const inbox = await http(s.r.stack.url, 'GET', `/api/action-review/proposals/${id}`, { token: s.r.tokens.rita });
    expect(inbox.body.data).toMatchObject({ status: 'rejected', decision_reason: 'different people' });
    expect(inbox.body.data.events.map((e: { type: string }) => e.type)).toEqual(['proposed', 'rejected']);

    expect((await reject(s.r.tokens.rita)).body.payload.code).toBe('already_decided');
    const approve = await post(`${approvals}/${id}/approve`, s.r.tokens.rita);
    expect([approve.status, approve.body.payload.code]).toEqual([409, 'already_decided']);
    const execute = await post(`${approvals}/${id}/execute`, s.r.tokens.rita, { connection_name: 'crm_main' });
    expect([execute.status, execute.body.success, execute.body.refusal_reason]).toEqual([200, false, 'not_approved']);
    const viaTool = (token: string) =>
      http(s.r.stack.url, 'POST', '/api/tool_call', {
        token,
        body: {
          tool: 'crm_connector',
          arguments: { action: 'execute_merge', approval_id: id, connection_name: 'crm_main' },
        },
      });
    expect((await viaTool(s.r.tokens.rita)).body.data.result).toMatchObject({
      success: false,
      claimed: false,
      refusal_reason: 'not_approved',
    });
    // Not raised by this agent's bot: hidden from it, as in Action Review.
    expect((await viaTool(agent)).status).toBe(404);
    expect(s.crm.counts.patch + s.crm.counts.soap).toBe(0);
    expect(s.crm.records.get(LOSER_A)!.deleted).toBe(false);
    expect(s.crm.records.get(SURVIVOR)!.fields.Email).toBeNull();

    // The approval's workflow has nothing left to guard: it ends now, not at the TTL.
    expect(await s.r.stack.api.deps.temporal.workflow.getHandle(`crm-merge/${id}`).result()).toMatchObject({
      phase: 'settled',
      finalStatus: 'rejected',
    });
    // Past its lifetime with its workflow gone, a rejected approval stays rejected: nothing to release.
    await query(
      s.r.stack.db.url,
      `update crm_merge_approvals set expires_at = now() - interval '1 hour' where approval_id = $1`,
      [id],
    );
    const list = await http(s.r.stack.url, 'GET', approvals, { token: s.r.tokens.rita });
    expect(list.body.data.approvals.find((a: { approval_id: string }) => a.approval_id === id)).toMatchObject({
      status: 'rejected',
    });
    expect(
      (await query(s.r.stack.db.url, 'select status from crm_merge_approvals where approval_id = $1', [id]))[0]!.status,
    ).toBe('open');
  });
});

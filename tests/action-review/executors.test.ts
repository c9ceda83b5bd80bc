import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import {
  path,
  propose,
  recordHistory,
  startFakeTracker,
  startReviewStack,
  ticket,
  type FakeTracker,
  type ReviewStack,
} from './support.js';

let r: ReviewStack;
let tracker: FakeTracker;
const logLines: string[] = [];

beforeAll(async () => {
  tracker = await startFakeTracker();
  r = await startReviewStack(
    {
      TICKET_TRACKER_URL: tracker.url,
      LOCAL_CLI_ALLOWED_COMMANDS: 'echo,env,sleep',
      LOCAL_CLI_TIMEOUT_SECONDS: '1',
    },
    logLines,
  );
});
afterAll(async () => {
  await r?.close();
  await tracker?.close();
});

const cli = (command: string, args: string[]) => ({
  action_type: 'local_cli.run.v1',
  payload: { command, args },
  expected_effect: `runs ${command}`,
});
const approve = async (id: string) => {
  const res = await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.ravi, body: {} });
  expect(res.status).toBe(200);
  return res.body;
};

describe('local_cli.run.v1 (approving is the action)', () => {
  it('runs an allow-listed command on approve and captures exit code and output', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, cli('echo', ['hello', 'world']));
    const res = await approve(id);
    expect(res).toMatchObject({ decided: true, claimed: true, final_status: 'executed' });
    expect(res.execution_result).toMatchObject({
      command: 'echo',
      exit_code: 0,
      succeeded: true,
      stdout: 'hello world\n',
    });
    expect(res.proposal.execution_receipt).toEqual(res.execution_result);
    await recordHistory(r.stack.api.deps.temporal, `action-review/${id}`, 'action-review-self-applying-local-cli');
  });

  it('gives the command a scrubbed environment', async () => {
    const res = await approve(await propose(r.stack.url, r.tokens.rita, cli('env', [])));
    const names = (res.execution_result.stdout as string)
      .trim()
      .split('\n')
      .map((l) => l.split('=')[0])
      .sort();
    expect(names).toEqual(['LANG', 'PATH']);
  });

  it('refuses a command off the allow-list when it is proposed (400 command_not_allowed), not after approval', async () => {
    const before = await query(r.stack.db.url, 'select proposal_id from action_review_proposals order by 1');
    const res = await http(r.stack.url, 'POST', '/api/action-review/proposals', {
      token: r.tokens.rita,
      body: cli('rm', ['-rf', '/tmp/x']),
    });
    expect([res.status, res.body.error_type, res.body.payload.code]).toEqual([
      400,
      'bad_request',
      'command_not_allowed',
    ]);
    expect(res.body.payload.allowed_commands).toEqual(['echo', 'env', 'sleep']);
    expect(await query(r.stack.db.url, 'select proposal_id from action_review_proposals order by 1')).toEqual(before);
  });

  it('a command cut short by the timeout may have done work: reconciliation_required, outcome_not_recorded', async () => {
    const res = await approve(await propose(r.stack.url, r.tokens.rita, cli('sleep', ['5'])));
    expect(res).toMatchObject({
      final_status: 'reconciliation_required',
      execution_refusal_reason: 'outcome_not_recorded',
    });
    expect(res.execution_error_detail).toContain('timed out');
  });
});

describe('internal action types', () => {
  it('applies test-case approval on approve (self-applying) into prover_decisions', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, {
      action_type: 'prover.approve_view_test_cases.v1',
      payload: { view_id: 'v_orders', test_case_ids: ['t1', 't2'] },
      expected_effect: 'Two test cases approved for v_orders.',
    });
    expect(await approve(id)).toMatchObject({ final_status: 'executed', proposal: { approving_is_the_action: true } });
    expect(
      await query(r.stack.db.url, 'select action_type, subject_id from prover_decisions where proposal_id = $1', [id]),
    ).toEqual([{ action_type: 'prover.approve_view_test_cases.v1', subject_id: 'v_orders' }]);
  });

  it('does not apply a non-self-applying type on approve', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, {
      action_type: 'prover.approve_composite_bundle.v1',
      payload: { bundle_id: 'b1', member_ids: ['m1'] },
      expected_effect: 'Bundle b1 approved.',
    });
    const res = await approve(id);
    expect(res.proposal).toMatchObject({ status: 'approved', approving_is_the_action: false });
    expect(await query(r.stack.db.url, 'select * from prover_decisions where proposal_id = $1', [id])).toEqual([]);
  });
});

describe('external action types', () => {
  it('crm.merge.v1 raised without a CRM merge approval refuses with not_applied', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, {
      action_type: 'crm.merge.v1',
      payload: { object_kind: 'Contact', survivor_id: 'c1', loser_ids: ['c2'] },
      expected_effect: 'c2 merged into c1.',
    });
    await approve(id);
    const res = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.ravi });
    expect(res.body).toMatchObject({
      success: false,
      claimed: true,
      final_status: 'not_applied',
      refusal_reason: 'crm_approval_missing',
    });
    expect(res.body.refusal_detail).toContain('POST /api/crm/merge/approvals');
  });

  it('ticket.write.v1 refused by the tracker (4xx) is not_applied', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('archived project'));
    await approve(id);
    tracker.mode = 'reject';
    const res = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.ravi });
    tracker.mode = 'ok';
    expect(res.body).toMatchObject({ final_status: 'not_applied', refusal_reason: 'tracker_refused' });
    expect(res.body.refusal_detail).toMatch(
      /^The issue tracker refused the ticket \(HTTP 422\); nothing was created \(error_id [0-9a-f-]{36}\)\.$/,
    );
    // The tracker's own words stay in the log, under the id the refusal names.
    expect(JSON.stringify(res.body)).not.toContain('project is archived');
    const errorId = /error_id ([0-9a-f-]{36})/.exec(res.body.refusal_detail)![1]!;
    expect(logLines.find((l) => l.includes(errorId) && l.includes('project is archived'))).toBeDefined();
  });

  it('ticket.write.v1 answered 5xx is reconciliation_required, described by status and error_id, never by the tracker’s text', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('gateway error'));
    await approve(id);
    tracker.mode = 'fail';
    const res = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.ravi });
    tracker.mode = 'ok';
    expect(res.body).toMatchObject({ success: false, claimed: true, final_status: 'reconciliation_required' });
    expect(res.body.error_detail).toMatch(
      /^The issue tracker answered HTTP 502; the ticket may have been created\. \(error_id [0-9a-f-]{36}\)$/,
    );
    expect(JSON.stringify(res.body)).not.toContain('tracker-internal-hostname');
    const errorId = /error_id ([0-9a-f-]{36})/.exec(res.body.error_detail)![1]!;
    expect(logLines.find((l) => l.includes(errorId) && l.includes('tracker-internal-hostname'))).toBeDefined();
    const detail = await http(r.stack.url, 'GET', path(id), { token: r.tokens.ravi });
    expect(detail.body.data.execution_error_detail).toBe(res.body.error_detail);
  });
});

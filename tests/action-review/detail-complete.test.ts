/**
 * Action Review detail, complete (issue 31 item 5): the bundle fields a proposal reads from the
 * composite bundle request covering it (`bundle_supersession`, `can_renew`, `ownership_reason`,
 * `holding_bundle_request`), and statements stored by reference with the 409 `proposal_text_unavailable`
 * refusal when they cannot be rejoined (the proposal may still be rejected).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STATEMENT_INLINE_MAX_BYTES } from '../../shared/action-review/statements.js';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import { path, propose, startReviewStack, ticket, type ReviewStack } from './support.js';

let r: ReviewStack;

beforeAll(async () => {
  r = await startReviewStack();
});
afterAll(async () => {
  await r?.close();
});

const detail = async (id: string, q = '') => {
  const res = await http(r.stack.url, 'GET', path(id, q), { token: r.tokens.rita });
  expect(res.status, res.text).toBe(200);
  return res.body.data as Record<string, any>;
};
const bundle = (bundleId: string, memberIds: string[]) =>
  propose(r.stack.url, r.tokens.rita, {
    action_type: 'prover.approve_composite_bundle.v1',
    payload: { bundle_id: bundleId, member_ids: memberIds },
    expected_effect: `Bundle ${bundleId} approved.`,
  });
const decide = async (id: string, kind: 'approve' | 'reject' | 'execute', token = r.tokens.ravi) => {
  const res = await http(r.stack.url, 'POST', path(id, `/${kind}`), { token, body: {} });
  expect(res.status, res.text).toBe(200);
  return res.body;
};

describe('bundle fields on the detail', () => {
  it('a proposal no bundle covers reads them empty', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('alone'));
    expect(await detail(id)).toMatchObject({
      bundle_supersession: null,
      can_renew: false,
      ownership_reason: null,
      holding_bundle_request: null,
    });
  });

  it('a live bundle request holds its members; declined, it releases them to be renewed', async () => {
    const member = await propose(r.stack.url, r.tokens.rita, ticket('bundled'));
    const b = await bundle('bundle-live', [member]);
    const held = await detail(member);
    expect(held).toMatchObject({
      bundle_supersession: null,
      can_renew: false,
      ownership_reason: 'bundle_request_live',
      holding_bundle_request: { proposal_id: b, bundle_id: 'bundle-live', status: 'requested' },
    });
    expect(held.holding_bundle_request.url).toMatch(new RegExp(`/console/proposals/${b}$`));
    // The bundle request itself is no member of anything.
    expect(await detail(b)).toMatchObject({ ownership_reason: null, holding_bundle_request: null });

    await decide(b, 'approve');
    expect((await detail(member)).ownership_reason).toBe('bundle_request_live');

    const other = await propose(r.stack.url, r.tokens.rita, ticket('declined'));
    const declined = await bundle('bundle-declined', [other]);
    await decide(declined, 'reject');
    expect(await detail(other)).toMatchObject({
      bundle_supersession: null,
      can_renew: true,
      ownership_reason: 'bundle_declined',
      holding_bundle_request: null,
    });
    // Once decided alone, there is nothing left to renew.
    await decide(other, 'reject');
    expect(await detail(other)).toMatchObject({ can_renew: false, ownership_reason: 'bundle_declined' });
  });

  it('an executed bundle supersedes its members', async () => {
    const member = await propose(r.stack.url, r.tokens.rita, ticket('superseded'));
    const b = await bundle('bundle-done', [member]);
    await decide(b, 'approve');
    expect((await decide(b, 'execute')).final_status).toBe('executed');
    const view = await detail(member);
    expect(view).toMatchObject({
      bundle_supersession: {
        bundle_id: 'bundle-done',
        outcome: 'superseded',
        superseded_by_proposal_id: b,
      },
      can_renew: false,
      ownership_reason: null,
      holding_bundle_request: null,
    });
    expect(view.bundle_supersession.superseded_by_url).toMatch(new RegExp(`/console/proposals/${b}$`));
  });

  it('a bundle request that was not created releases its members as policy-denied', async () => {
    const member = await propose(r.stack.url, r.tokens.rita, ticket('denied'));
    const b = await bundle('bundle-denied', [member]);
    // The projection as an executor's refusal leaves it (no internal executor refuses a bundle today).
    await query(
      r.stack.db.url,
      `update action_review_proposals set status = 'not_applied', final_status = 'not_applied' where proposal_id = $1`,
      [b],
    );
    expect(await detail(member)).toMatchObject({
      bundle_supersession: {
        bundle_id: 'bundle-denied',
        outcome: 'bundle_request_not_created',
        superseded_by_proposal_id: null,
        superseded_by_url: null,
      },
      can_renew: true,
      ownership_reason: 'bundle_policy_denied',
      holding_bundle_request: null,
    });
  });
});

describe('statements stored by reference', () => {
  const long = 'The reviewer must read every line of this. '.repeat(200);

  it('keeps a short statement inline and a long one by reference, rejoined on every read', async () => {
    expect(Buffer.byteLength(long)).toBeGreaterThan(STATEMENT_INLINE_MAX_BYTES);
    const short = await propose(r.stack.url, r.tokens.rita, { ...ticket('short'), requested_statement: 'Short.' });
    const id = await propose(r.stack.url, r.tokens.rita, { ...ticket('long'), requested_statement: long });
    const rows = await query<{ proposal_id: string; requested_statement: string | null; statement_ref: string | null }>(
      r.stack.db.url,
      'select proposal_id, requested_statement, statement_ref from action_review_proposals where proposal_id = any($1)',
      [[short, id]],
    );
    expect(rows.find((x) => x.proposal_id === short)).toMatchObject({
      requested_statement: 'Short.',
      statement_ref: null,
    });
    expect(rows.find((x) => x.proposal_id === id)).toMatchObject({
      requested_statement: null,
      statement_ref: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
    expect((await detail(id, '?include_statement=true')).requested_statement).toBe(long);
    expect((await detail(id)).requested_statement).toBeNull();
    const status = await http(r.stack.url, 'GET', path(id, '/status?include_statement=true'), {
      token: r.tokens.rita,
    });
    expect(status.body.data.requested_statement).toBe(long);
    const list = await http(r.stack.url, 'GET', '/api/action-review/proposals?include_statement=true&limit=100', {
      token: r.tokens.rita,
    });
    expect(list.body.proposals.find((p: { proposal_id: string }) => p.proposal_id === id).requested_statement).toBe(
      long,
    );
  });

  it('refuses reading and approving text that cannot be rejoined with 409 proposal_text_unavailable; rejecting works', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, {
      ...ticket('lost text'),
      requested_statement: `${long} lost`,
    });
    const [{ statement_ref: ref }] = await query<{ statement_ref: string }>(
      r.stack.db.url,
      'select statement_ref from action_review_proposals where proposal_id = $1',
      [id],
    );
    await query(r.stack.db.url, 'delete from action_review_statements where digest = $1', [ref]);

    const read = await http(r.stack.url, 'GET', path(id, '?include_statement=true'), { token: r.tokens.rita });
    expect(read.status).toBe(409);
    expect(read.body).toMatchObject({
      error_type: 'conflict',
      request_id: expect.any(String),
      payload: { code: 'proposal_text_unavailable', proposal_id: id, statement_ref: ref, can_reject: true },
    });
    // Without the statement the detail reads as before, and the inbox shows the row with a null statement.
    expect((await detail(id)).status).toBe('requested');
    const list = await http(r.stack.url, 'GET', '/api/action-review/proposals?include_statement=true&limit=100', {
      token: r.tokens.rita,
    });
    expect(
      list.body.proposals.find((p: { proposal_id: string }) => p.proposal_id === id).requested_statement,
    ).toBeNull();

    for (const route of ['/approve', '/approve-and-execute']) {
      const refused = await http(r.stack.url, 'POST', path(id, route), { token: r.tokens.ravi, body: {} });
      expect([refused.status, refused.body.payload?.code]).toEqual([409, 'proposal_text_unavailable']);
    }
    expect((await detail(id)).status).toBe('requested');
    const rejected = await decide(id, 'reject');
    expect(rejected.proposal.status).toBe('rejected');
  });

  it('a text that no longer matches its digest cannot be rejoined either', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, {
      ...ticket('changed text'),
      requested_statement: `${long} x`,
    });
    await query(
      r.stack.db.url,
      `update action_review_statements set text = 'something else' where digest =
         (select statement_ref from action_review_proposals where proposal_id = $1)`,
      [id],
    );
    const read = await http(r.stack.url, 'GET', path(id, '?include_statement=true'), { token: r.tokens.rita });
    expect([read.status, read.body.payload?.code]).toEqual([409, 'proposal_text_unavailable']);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import {
  learning,
  path,
  propose,
  recordHistory,
  startReviewStack,
  ticket,
  startFakeTracker,
  type FakeTracker,
  type ReviewStack,
} from './support.js';

let r: ReviewStack;
let tracker: FakeTracker;

beforeAll(async () => {
  tracker = await startFakeTracker();
  r = await startReviewStack({ TICKET_TRACKER_URL: tracker.url, TICKET_TRACKER_TOKEN: 'tracker-token' });
});
afterAll(async () => {
  await r?.close();
  await tracker?.close();
});

describe('create, approve, execute once', () => {
  it('creates a requested proposal with its first event', async () => {
    const res = await http(r.stack.url, 'POST', '/api/action-review/proposals', {
      token: r.tokens.rita,
      body: { ...ticket(), requested_statement: 'Please file it.' },
    });
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    const p = res.body.data;
    expect(p).toMatchObject({
      status: 'requested',
      action_type: 'ticket.write.v1',
      approving_is_the_action: false,
      requester_kind: 'person',
      version: 1,
    });
    expect(p.requester).toMatchObject({ id: 'rita', label: 'Rita Reviewer' });
    expect(p.events).toEqual([expect.objectContaining({ seq: 1, type: 'proposed' })]);
    const rows = await query(r.stack.db.url, 'select status from action_review_proposals where proposal_id = $1', [
      p.proposal_id,
    ]);
    expect(rows).toEqual([{ status: 'requested' }]);
  });

  it('approves, executes exactly once, and answers a repeat with the recorded outcome', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('exactly once'));
    const approved = await http(r.stack.url, 'POST', path(id, '/approve'), {
      token: r.tokens.ravi,
      body: { reason: 'looks right' },
    });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ success: true, decided: true, refusal_reason: null });
    expect(approved.body.proposal).toMatchObject({
      status: 'approved',
      decided_by: 'ravi',
      decided_by_label: 'Ravi Reviewer',
      decision_reason: 'looks right',
    });
    expect(approved.body.final_status).toBeUndefined();

    const before = tracker.requests.length;
    const first = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.ravi });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, claimed: true, final_status: 'executed', replayed: false });
    expect(first.body.execution_result).toMatchObject({
      http_status: 201,
      ticket_id: expect.stringMatching(/^ISSUE-/),
    });
    const second = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.rita });
    expect(second.body).toMatchObject({ success: true, claimed: true, final_status: 'executed', replayed: true });
    expect(second.body.execution_result).toEqual(first.body.execution_result);
    expect(tracker.requests.length - before).toBe(1);
    expect(tracker.requests.at(-1)!.headers['idempotency-key']).toBe(id);
    expect(tracker.requests.at(-1)!.headers.authorization).toBe('Bearer tracker-token');

    const detail = await http(r.stack.url, 'GET', path(id), { token: r.tokens.rita });
    expect(detail.body.data.events.map((e: { type: string }) => e.type)).toEqual([
      'proposed',
      'approved',
      'execution_claimed',
      'executed',
    ]);
    expect(detail.body.data.events.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(detail.body.data).toMatchObject({ status: 'executed', final_status: 'executed', claimed: true });
    await recordHistory(r.stack.api.deps.temporal, `action-review/${id}`, 'action-review-approve-execute');
  });

  it('applies a self-applying type on approve and carries the execution fields', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, learning(7));
    const res = await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.ravi, body: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, decided: true, claimed: true, final_status: 'executed' });
    expect(res.body.proposal).toMatchObject({ status: 'executed', approving_is_the_action: true });
    expect(
      await query(r.stack.db.url, 'select learning_id, adopted_by from adopted_learnings where proposal_id = $1', [id]),
    ).toEqual([{ learning_id: 'learning-7', adopted_by: 'ravi' }]);
  });
});

describe('an Idempotency-Key makes a create safe to send again', () => {
  const create = (token: string, key: string | undefined, body: Record<string, unknown>) =>
    http(r.stack.url, 'POST', '/api/action-review/proposals', {
      token,
      body,
      headers: key === undefined ? {} : { 'idempotency-key': key },
    });
  const proposals = async () =>
    Number(
      (await query<{ n: string }>(r.stack.db.url, 'select count(*)::text as n from action_review_proposals'))[0]!.n,
    );

  it('answers a repeat with the same proposal, once created, and refuses the key for another proposal', async () => {
    const before = await proposals();
    const first = await create(r.tokens.rita, 'retry-me-1', ticket('idempotent create'));
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await create(r.tokens.rita, 'retry-me-1', ticket('idempotent create'));
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.proposal_id).toBe(first.body.data.proposal_id);
    expect(again.body.data.events).toEqual([expect.objectContaining({ seq: 1, type: 'proposed' })]);
    expect(await proposals()).toBe(before + 1);

    const other = await create(r.tokens.rita, 'retry-me-1', ticket('a different ticket'));
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({
      error_type: 'conflict',
      payload: { code: 'idempotency_key_reused', proposal_id: first.body.data.proposal_id },
    });
    expect(await proposals()).toBe(before + 1);

    // A key is its caller's own: another person's same key names another proposal.
    const ravis = await create(r.tokens.ravi, 'retry-me-1', ticket('idempotent create'));
    expect(ravis.status).toBe(201);
    expect(ravis.body.data.proposal_id).not.toBe(first.body.data.proposal_id);
    expect(await proposals()).toBe(before + 2);
  });

  it('creates one proposal from concurrent requests with the same key', async () => {
    const before = await proposals();
    const answers = await Promise.all(
      [1, 2, 3].map(() => create(r.tokens.rita, 'concurrent-key', ticket('one of three'))),
    );
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201]);
    expect(new Set(answers.map((a) => a.body.data.proposal_id)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === null).length).toBeGreaterThanOrEqual(1);
    expect(await proposals()).toBe(before + 1);
  });

  it('refuses the key for another create before writing anything, also when the creates race', async () => {
    const before = await proposals();
    const threads = async () =>
      (
        await query<{ id: string }>(
          r.stack.db.url,
          "select id from conversation_threads where id like 'idem-race-%' order by id",
        )
      ).map((t) => t.id);
    const answers = await Promise.all(
      [1, 2, 3].map((i) =>
        create(r.tokens.rita, 'racing-key', { ...ticket(`racing ${i}`), thread_id: `idem-race-${i}` }),
      ),
    );
    const won = answers.filter((a) => a.status === 201);
    expect(won).toHaveLength(1);
    const lost = answers.filter((a) => a.status === 409);
    expect(lost).toHaveLength(2);
    for (const a of lost)
      expect(a.body.payload).toEqual({ code: 'idempotency_key_reused', proposal_id: won[0]!.body.data.proposal_id });
    // Only the winner's thread was registered: the others were refused before writing.
    expect(await threads()).toEqual([won[0]!.body.data.thread_id]);
    expect(await proposals()).toBe(before + 1);
    // The key covers the whole create, the requested statement too.
    const i = answers.indexOf(won[0]!) + 1;
    const winner = { ...ticket(`racing ${i}`), thread_id: `idem-race-${i}` };
    const changed = await create(r.tokens.rita, 'racing-key', { ...winner, requested_statement: 'Other words.' });
    expect(changed.status).toBe(409);
    const repeated = await create(r.tokens.rita, 'racing-key', winner);
    expect(repeated.status).toBe(201);
    expect(repeated.body.data.proposal_id).toBe(won[0]!.body.data.proposal_id);
  });

  it('is declared in the OpenAPI document: the request header and the replay answer header', async () => {
    const doc = (await http(r.stack.url, 'GET', '/openapi.json')).body;
    const create = doc.paths['/api/action-review/proposals'].post;
    expect(create.parameters).toContainEqual(
      expect.objectContaining({ in: 'header', name: 'idempotency-key', required: false }),
    );
    expect(create.responses['201'].headers['Idempotent-Replayed']).toEqual({
      description: expect.stringContaining('earlier create'),
      schema: { type: 'string', const: 'true' },
    });
  });

  it('refuses a malformed key and writes nothing', async () => {
    const before = await proposals();
    for (const key of ['has a space', 'x'.repeat(256)]) {
      const res = await create(r.tokens.rita, key, ticket('bad key'));
      expect(res.status).toBe(400);
      expect(res.body.error_type).toBe('bad_request');
      expect(res.body.payload.fields.map((f: { field: string }) => f.field)).toEqual(['headers.idempotency-key']);
    }
    expect(await proposals()).toBe(before);
  });
});

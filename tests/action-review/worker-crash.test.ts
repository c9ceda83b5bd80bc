import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http } from '../helpers/stack.js';
import { startWorker, type RunningWorker } from '../helpers/temporal.js';
import {
  path,
  propose,
  recordHistory,
  startFakeTracker,
  startReviewStack,
  ticket,
  waitFor,
  type FakeTracker,
  type ReviewStack,
} from './support.js';

let r: ReviewStack;
let tracker: FakeTracker;
let replacement: RunningWorker | undefined;

beforeAll(async () => {
  tracker = await startFakeTracker();
  // A short heartbeat timeout so a worker that vanishes mid-effect is noticed quickly.
  r = await startReviewStack({ TICKET_TRACKER_URL: tracker.url, ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS: '2' });
});
afterAll(async () => {
  await replacement?.stop();
  await r?.close();
  await tracker?.close();
});

describe('a worker dies while the effect runs', () => {
  it('ends in reconciliation_required, never retries the effect, and a person reconciles it', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('worker dies mid-write'));
    expect((await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.ravi, body: {} })).status).toBe(
      200,
    );

    tracker.mode = 'hang';
    const execution = http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.ravi });
    await waitFor(async () => tracker.requests.length === 1, 'the effect to reach the tracker');
    // Shut the worker down mid-effect (the stack's own close() later releases its connection).
    const dying = r.stack.worker!.worker;
    dying.shutdown();
    await waitFor(async () => dying.getState() === 'STOPPED', 'the worker to stop');
    tracker.mode = 'ok';
    replacement = await startWorker({ orm: r.stack.api.deps.orm, config: r.stack.config, log: r.stack.log });

    const answered = await execution;
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({
      success: false,
      claimed: true,
      final_status: 'reconciliation_required',
      replayed: false,
    });
    expect(answered.body.error_detail).toEqual(expect.any(String));

    const again = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.rita });
    expect(again.body).toMatchObject({ claimed: true, final_status: 'reconciliation_required', replayed: true });
    expect(tracker.requests).toHaveLength(1);

    const detail = await http(r.stack.url, 'GET', path(id), { token: r.tokens.rita });
    expect(detail.body.data).toMatchObject({
      status: 'reconciliation_required',
      final_status: 'reconciliation_required',
      claimed: true,
    });

    const reconciled = await http(r.stack.url, 'POST', path(id, '/reconcile'), {
      token: r.tokens.rita,
      body: { final_status: 'executed', note: 'Found ISSUE-1 in the tracker.' },
    });
    expect(reconciled.status).toBe(200);
    expect(reconciled.body).toMatchObject({ resolved: true, final_status: 'executed', refusal_reason: null });
    expect(reconciled.body.proposal).toMatchObject({
      status: 'resolved',
      final_status: 'executed',
      resolved_by: 'rita',
      resolution_note: 'Found ISSUE-1 in the tracker.',
    });
    expect(reconciled.body.proposal.events.map((e: { type: string }) => e.type)).toEqual([
      'proposed',
      'approved',
      'execution_claimed',
      'reconciliation_required',
      'reconciled',
    ]);
    const status = await http(r.stack.url, 'GET', path(id, '/status'), { token: r.tokens.rita });
    expect(status.body.data).toMatchObject({ status: 'resolved', effective_status: 'executed' });
    expect(tracker.requests).toHaveLength(1);

    // Operators find it by search attributes (visibility is eventually consistent).
    const client = r.stack.api.deps.temporal;
    await waitFor(async () => {
      for await (const wf of client.workflow.list({
        query: `PlatformResourceId = "${id}" AND ProposalStatus = "resolved" AND ActionType = "ticket.write.v1"`,
      })) {
        return wf.workflowId === `action-review/${id}`;
      }
      return false;
    }, 'the search attributes to show the resolved proposal');
    const described = await client.workflow.getHandle(`action-review/${id}`).describe();
    expect(await described.memo).toMatchObject({
      action_type: 'ticket.write.v1',
      requester: { kind: 'person', id: 'rita' },
    });
    await recordHistory(client, `action-review/${id}`, 'action-review-worker-crash-reconcile');
  });
});

/**
 * Updates that meet a closed proposal workflow: the server answers "Workflow Update failed because
 * the Workflow completed before the Update completed" when the workflow ends while an accepted
 * Update runs. That is an answer about the lifecycle, read from the projection, never a 500.
 */
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isClosedWorkflow, sendUpdate } from '../../shared/action-review/updates.js';
import type { AppDeps } from '../../shared/app-deps.js';
import { executeUpdate } from '../../workflows/action-review-definitions.js';
import { query } from '../helpers/db.js';
import { http } from '../helpers/stack.js';
import {
  path,
  propose,
  startFakeTracker,
  startReviewStack,
  ticket,
  waitFor,
  type FakeTracker,
  type ReviewStack,
} from './support.js';

const outlived = () =>
  new WorkflowUpdateFailedError(
    'Workflow Update failed',
    ApplicationFailure.create({
      type: 'AcceptedUpdateCompletedWorkflow',
      message: 'Workflow Update failed because the Workflow completed before the Update completed.',
      nonRetryable: true,
    }),
  );

describe('recognising an Update the workflow did not outlive', () => {
  it('treats the server’s AcceptedUpdateCompletedWorkflow failure as "closed", and other update failures as errors', async () => {
    expect(isClosedWorkflow(outlived())).toBe(true);
    expect(
      isClosedWorkflow(
        new WorkflowUpdateFailedError('failed', ApplicationFailure.create({ type: 'SomethingElse', message: 'x' })),
      ),
    ).toBe(false);
    const deps = {
      temporal: { workflow: { getHandle: () => ({ executeUpdate: () => Promise.reject(outlived()) }) } },
    } as unknown as AppDeps;
    const caller = { kind: 'person', id: 'p', tenant: 't', label: 'P', credential: 'idp_jwt' } as const;
    expect(
      await sendUpdate(deps, 'p-1', executeUpdate, { caller, origin: { surface: 'api', threadId: null } }),
    ).toEqual({ ok: false, closed: true });
  });
});

describe('an execute whose workflow ends while the effect runs', () => {
  let r: ReviewStack;
  let tracker: FakeTracker;
  beforeAll(async () => {
    tracker = await startFakeTracker();
    r = await startReviewStack({ TICKET_TRACKER_URL: tracker.url });
  });
  afterAll(async () => {
    await r?.close();
    await tracker?.close();
  });

  it('answers 200 from the projection: claimed, no outcome recorded, check the target', async () => {
    const id = await propose(r.stack.url, r.tokens.rita, ticket('terminated mid-effect'));
    expect((await http(r.stack.url, 'POST', path(id, '/approve'), { token: r.tokens.ravi, body: {} })).status).toBe(
      200,
    );
    tracker.mode = 'hang';
    const pending = http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.ravi });
    await waitFor(async () => {
      const rows = await query<{ status: string }>(
        r.stack.db.url,
        'select status from action_review_proposals where proposal_id = $1',
        [id],
      );
      return tracker.requests.length === 1 && rows[0]?.status === 'executing';
    }, 'the effect to reach the tracker');
    await r.stack.api.deps.temporal.workflow
      .getHandle(`action-review/${id}`)
      .terminate('test: the workflow ends while the execute update runs');
    const answered = await pending;
    expect(answered.status, answered.text).toBe(200);
    expect(answered.body).toMatchObject({
      success: false,
      claimed: true,
      final_status: null,
      replayed: false,
      refusal_reason: 'outcome_not_recorded',
    });
    expect(answered.body.refusal_detail).toMatch(/may have happened/);
    // Asked again, the same answer: nothing claims or runs twice.
    const again = await http(r.stack.url, 'POST', path(id, '/execute'), { token: r.tokens.rita });
    expect(again.body).toMatchObject({ claimed: true, final_status: null, refusal_reason: 'outcome_not_recorded' });
    expect(tracker.requests).toHaveLength(1);
  });
});

/**
 * The worker process is killed (SIGKILL) while an effect is running: no graceful shutdown, no
 * cancellation reaching the executor, no word to the server. Temporal notices only through the
 * effect's heartbeat timeout; the proposal must end `reconciliation_required`, the effect must not
 * run a second time on the worker that takes over, and a person then reconciles it.
 *
 * Unlike worker-crash.test.ts (which shuts an in-process worker down), the worker here is a separate
 * process (tests/helpers/worker-process.ts) and the API runs in this process with no worker of its own.
 */
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/db.js';
import { http, startStack, type Stack } from '../helpers/stack.js';
import { spawnStackWorker } from '../helpers/stack-worker.js';
import type { WorkerProcess } from '../helpers/worker-process.js';
import { path, startFakeTracker, ticket, waitFor, type FakeTracker } from './support.js';

let stack: Stack;
let tracker: FakeTracker;
const workers: WorkerProcess[] = [];

/** A worker process on the stack's task queue, against its database, with the effect settings the test sets. */
function workerProcess(): WorkerProcess {
  return spawnStackWorker(stack, workers, {
    TICKET_TRACKER_URL: tracker.url,
    ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS: '2',
    ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS: '120',
  });
}

beforeAll(async () => {
  tracker = await startFakeTracker();
  // The API (AUTH_PROVIDER=none: every request is the local admin, a person who may decide and
  // reconcile) hands the workflow a 2 s heartbeat timeout and a start-to-close far above it, so the
  // dead worker is noticed by the heartbeat, not by the overall timeout.
  stack = await startStack({
    worker: false,
    env: {
      TICKET_TRACKER_URL: tracker.url,
      ACTION_REVIEW_EFFECT_HEARTBEAT_SECONDS: '2',
      ACTION_REVIEW_EFFECT_TIMEOUT_SECONDS: '120',
    },
  });
});

afterAll(async () => {
  // Whatever happened above, no worker process outlives the file.
  await Promise.all(workers.map((w) => w.stop(5_000)));
  await stack?.close();
  await tracker?.close();
});

const statusOf = async (id: string) =>
  (await http(stack.url, 'GET', path(id, '/status'))).body.data?.status as string | undefined;

describe('the worker process is SIGKILLed while the effect runs', () => {
  it(
    'ends in reconciliation_required, the effect ran exactly once, and a person reconciles it',
    { timeout: 180_000 },
    async () => {
      const first = workerProcess();
      await first.ready;

      const created = await http(stack.url, 'POST', '/api/action-review/proposals', {
        body: ticket('worker killed mid-write'),
      });
      expect(created.status, created.text).toBe(201);
      const id = created.body.data.proposal_id as string;
      const approved = await http(stack.url, 'POST', path(id, '/approve'), { body: {} });
      expect(approved.status, approved.text).toBe(200);
      expect(approved.body.proposal).toMatchObject({ status: 'approved', approving_is_the_action: false });

      // The tracker accepts the request and never answers: the effect is in flight in the worker process.
      tracker.mode = 'hang';
      const execution = http(stack.url, 'POST', path(id, '/execute'));
      await waitFor(async () => tracker.requests.length >= 1, 'the effect to reach the tracker');
      expect(await statusOf(id)).toBe('executing');

      const killed = await first.kill();
      expect(killed.signal).toBe('SIGKILL');
      // From here a retried effect would succeed and be counted.
      tracker.mode = 'ok';

      const second = workerProcess();
      await second.ready;

      await waitFor(
        async () => (await statusOf(id)) === 'reconciliation_required',
        'the proposal to need reconciliation',
        90_000,
      );
      const answered = await execution;
      expect(answered.status, answered.text).toBe(200);
      expect(answered.body).toMatchObject({
        success: false,
        claimed: true,
        final_status: 'reconciliation_required',
        replayed: false,
      });
      expect(answered.body.error_detail).toMatch(/heartbeat/i);

      // Asking again answers the recorded outcome; the tracker still saw exactly one request.
      const again = await http(stack.url, 'POST', path(id, '/execute'));
      expect(again.body).toMatchObject({ claimed: true, final_status: 'reconciliation_required', replayed: true });
      expect(tracker.requests).toHaveLength(1);
      expect(tracker.requests[0]!.headers['idempotency-key']).toBe(id);

      // Temporal scheduled the effect once and timed it out on the heartbeat: no second attempt.
      const history = await stack.api.deps.temporal.workflow.getHandle(`action-review/${id}`).fetchHistory();
      const events = history.events ?? [];
      const effectScheduled = events.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runProposalEffect',
      );
      expect(effectScheduled).toHaveLength(1);
      const timedOut = events.filter((e) => e.activityTaskTimedOutEventAttributes);
      expect(timedOut).toHaveLength(1);
      const timeoutType = timedOut[0]!.activityTaskTimedOutEventAttributes!.failure?.timeoutFailureInfo?.timeoutType;
      expect(timeoutType).toBe(temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT);

      const detail = await http(stack.url, 'GET', path(id));
      expect(detail.body.data).toMatchObject({
        status: 'reconciliation_required',
        final_status: 'reconciliation_required',
        claimed: true,
      });

      const reconciled = await http(stack.url, 'POST', path(id, '/reconcile'), {
        body: { final_status: 'executed', note: 'The tracker holds the issue; the worker died before recording it.' },
      });
      expect(reconciled.status, reconciled.text).toBe(200);
      expect(reconciled.body).toMatchObject({ resolved: true, final_status: 'executed', refusal_reason: null });
      expect(reconciled.body.proposal).toMatchObject({
        status: 'resolved',
        final_status: 'executed',
        resolved_by: 'local-admin',
      });
      expect(reconciled.body.proposal.events.map((e: { type: string }) => e.type)).toEqual([
        'proposed',
        'approved',
        'execution_claimed',
        'reconciliation_required',
        'reconciled',
      ]);

      // The workflow ends once resolved; the projection agrees, and the effect still ran once.
      const handle = stack.api.deps.temporal.workflow.getHandle(`action-review/${id}`);
      await waitFor(
        async () => (await handle.describe()).status.name === 'COMPLETED',
        'the proposal workflow to complete',
      );
      const [row] = await query<{ status: string; final_status: string }>(
        stack.db.url,
        'select status, final_status from action_review_proposals where proposal_id = $1',
        [id],
      );
      expect(row).toEqual({ status: 'resolved', final_status: 'executed' });
      expect(tracker.requests).toHaveLength(1);
      expect(second.child.exitCode).toBeNull(); // the replacement kept running throughout
    },
  );
});

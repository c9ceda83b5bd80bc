/**
 * One poll of the issue tracker with a stub activity, in virtual time: the poll's result is the
 * workflow's, a tracker failure is an outcome (the workflow completes, `PlatformStatus` says `failed`),
 * a transient activity failure is retried with backoff, and one that outlasts the attempts fails the
 * workflow with status `failed`.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import {
  trackerPollNowWorkflowId,
  type TrackerPollInput,
  type TrackerPollResult,
} from '../../workflows/tracker-poll-definitions.js';
import { lifecycleAttributes, recorded, runStubbed, useTimeSkipping } from './support.js';

const temporal = useTimeSkipping();

const pollResult = (input: TrackerPollInput, error: TrackerPollResult['error'] = null): TrackerPollResult => ({
  poller: input.poller,
  ok: error === null,
  error,
  window_start: '2026-11-26T09:00:00.000Z',
  started_at: '2026-11-26T10:00:00.000Z',
  seen: error ? 0 : 3,
  events: error ? {} : { created: 2, resolved: 1 },
  dispatched: error ? 0 : 1,
});

/** Stubs: the poll throws `failures` times, then answers (a tracker failure when `error` is given). */
function pollStubs(opts: { failures?: number; error?: TrackerPollResult['error'] } = {}) {
  let failed = 0;
  return recorded({
    trackerPoll: async (input: TrackerPollInput) => {
      if (failed++ < (opts.failures ?? 0)) throw new Error('database unavailable');
      return pollResult(input, opts.error);
    },
  });
}

const poll = (stubs: ReturnType<typeof pollStubs>, input: TrackerPollInput) =>
  runStubbed(temporal.env, stubs.activities, 'trackerPollWorkflow', {
    workflowId: trackerPollNowWorkflowId(input.poller, randomUUID()),
    args: [input],
  });

describe('trackerPollWorkflow', () => {
  it("answers the poll's counts and shows `completed`", async () => {
    const input: TrackerPollInput = { poller: 'issue_tracker', trigger: 'schedule' };
    const stubs = pollStubs();
    const { handle, result } = await poll(stubs, input);
    expect(result).toEqual(pollResult(input));
    expect(stubs.calls.trackerPoll).toEqual([input]);
    expect((await lifecycleAttributes(handle)).status).toBe('completed');
  });

  it('completes on a tracker failure, keeping it in the result, and shows `failed`', async () => {
    const input: TrackerPollInput = { poller: 'service_desk', trigger: 'poll_now', lookbackMinutes: 30 };
    const error = { code: 'tracker_unreachable', message: 'connect ECONNREFUSED' };
    const stubs = pollStubs({ error });
    const { handle, result } = await poll(stubs, input);
    expect(result).toMatchObject({ poller: 'service_desk', ok: false, error, seen: 0 });
    expect(stubs.calls.trackerPoll).toEqual([input]);
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    expect((await lifecycleAttributes(handle)).status).toBe('failed');
  });

  it('retries a failing poll with backoff and answers once it succeeds', async () => {
    const input: TrackerPollInput = { poller: 'issue_tracker', trigger: 'schedule' };
    const stubs = pollStubs({ failures: 2 });
    const { handle, result } = await poll(stubs, input);
    expect(result).toEqual(pollResult(input));
    expect(stubs.count('trackerPoll')).toBe(3);
    expect((await lifecycleAttributes(handle)).status).toBe('completed');
  });

  it('fails after its five attempts and shows `failed`', async () => {
    const input: TrackerPollInput = { poller: 'issue_tracker', trigger: 'schedule' };
    const stubs = pollStubs({ failures: 100 });
    const { handle, result } = await poll(stubs, input);
    expect(result).toBeInstanceOf(WorkflowFailedError);
    expect(stubs.count('trackerPoll')).toBe(5);
    expect((await handle.describe()).status.name).toBe('FAILED');
    expect((await lifecycleAttributes(handle)).status).toBe('failed');
  });
});

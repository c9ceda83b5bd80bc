/**
 * The ticket-RCA vignette in virtual time: the code-agent run followed on timers (1 s doubling to
 * 15 s), the bounded retries of filing a ticket, a failed step, and a reset's cancellation. Stub
 * activities count each call.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ticketRcaWorkflowId, type TicketRcaInput } from '../../workflows/ticket-rca-definitions.js';
import { startTimeSkipping } from '../helpers/temporal.js';
import { eventKinds, recorded, stubWorker, timerSeconds } from './support.js';

let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await startTimeSkipping();
});
afterAll(async () => env?.teardown());

/**
 * Stubs: the run is followed `pendingPolls` times before it ends with `finalStatus`; each poll answers
 * once `pollsHeld` has settled, if given.
 */
function vignetteStubs(opts: {
  pendingPolls: number;
  finalStatus?: string;
  fileTicket?: () => Promise<unknown>;
  pollsHeld?: Promise<void>;
}) {
  let polls = 0;
  return recorded({
    ticketRcaFileTicket: opts.fileTicket ?? (async () => ({ ok: true, ticketKey: 'OPS-1' })),
    ticketRcaStartRun: async () => ({ ok: true, runId: 'run_1' }),
    ticketRcaFollowRun: async () => {
      await opts.pollsHeld;
      return ++polls > opts.pendingPolls
        ? { terminal: true, status: opts.finalStatus ?? 'finished' }
        : { terminal: false, status: 'running' };
    },
    ticketRcaFinish: async () => undefined,
  });
}

const input = (session: string): TicketRcaInput => ({ tenant: 't1', presenterSessionId: session, attempt: 1 });

async function run(stubs: ReturnType<typeof vignetteStubs>, session: string) {
  const { worker, taskQueue } = await stubWorker(env, stubs.activities);
  const handle = await env.client.workflow.start('ticketRcaWorkflow', {
    taskQueue,
    workflowId: ticketRcaWorkflowId('t1', session),
    args: [input(session)],
  });
  return { handle, worker, result: await worker.runUntil(handle.result()) };
}

describe('ticketRcaWorkflow', () => {
  it('follows the run on timers of 1 s doubling to 15 s and completes when it finished', async () => {
    const stubs = vignetteStubs({ pendingPolls: 6 });
    const { handle, result } = await run(stubs, 's_done');
    expect(result).toBe('completed');
    expect(await timerSeconds(handle)).toEqual([1, 2, 4, 8, 15, 15]);
    expect(stubs.count('ticketRcaFileTicket')).toBe(1);
    expect(stubs.count('ticketRcaStartRun')).toBe(1);
    expect(stubs.count('ticketRcaFollowRun')).toBe(7);
    expect(stubs.calls.ticketRcaStartRun).toEqual([{ ...input('s_done'), ticketKey: 'OPS-1' }]);
    expect(stubs.calls.ticketRcaFinish).toEqual([{ ...input('s_done'), state: 'completed' }]);
  });

  it('fails when the run ended otherwise, recording why', async () => {
    const stubs = vignetteStubs({ pendingPolls: 1, finalStatus: 'cancelled' });
    const { result } = await run(stubs, 's_cancelled_run');
    expect(result).toBe('failed');
    expect(stubs.calls.ticketRcaFinish).toEqual([
      {
        ...input('s_cancelled_run'),
        state: 'failed',
        code: 'CODE_AGENT_RUN_FAILED',
        message: 'The code-agent run ended cancelled.',
      },
    ]);
  });

  it('files the ticket at most three times when the tracker keeps failing, and starts no run', async () => {
    const stubs = vignetteStubs({
      pendingPolls: 0,
      fileTicket: async () => {
        throw ApplicationFailure.retryable('connection reset', 'TrackerDown');
      },
    });
    const { worker, taskQueue } = await stubWorker(env, stubs.activities);
    const handle = await env.client.workflow.start('ticketRcaWorkflow', {
      taskQueue,
      workflowId: ticketRcaWorkflowId('t1', 's_tracker_down'),
      args: [input('s_tracker_down')],
    });
    await expect(worker.runUntil(handle.result())).rejects.toThrow();
    expect(stubs.count('ticketRcaFileTicket')).toBe(3);
    expect(stubs.count('ticketRcaStartRun')).toBe(0);
  });

  it('records a refused filing as failed and starts no run', async () => {
    const stubs = vignetteStubs({
      pendingPolls: 0,
      fileTicket: async () => ({ ok: false, code: 'TICKETING_SETUP_REQUIRED', message: 'No tracker.' }),
    });
    const { result } = await run(stubs, 's_no_tracker');
    expect(result).toBe('failed');
    expect(stubs.count('ticketRcaStartRun')).toBe(0);
    expect(stubs.calls.ticketRcaFinish).toEqual([
      { ...input('s_no_tracker'), state: 'failed', code: 'TICKETING_SETUP_REQUIRED', message: 'No tracker.' },
    ]);
  });

  it('answers cancelled when a reset cancels it while it follows the run, after the poll in flight ends', async () => {
    // The poll is held until the workflow has asked to cancel it: cancelling while the activity's
    // completion races the cancel request makes the time-skipping test server refuse the workflow
    // task (ACTIVITY_UNKNOWN; the real server accepts it) and the test hang. Held, the order is fixed.
    let release!: () => void;
    const pollsHeld = new Promise<void>((resolve) => (release = resolve));
    const stubs = vignetteStubs({ pendingPolls: Number.MAX_SAFE_INTEGER, pollsHeld });
    const { worker, taskQueue } = await stubWorker(env, stubs.activities);
    const { handle, result } = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('ticketRcaWorkflow', {
        taskQueue,
        workflowId: ticketRcaWorkflowId('t1', 's_reset'),
        args: [input('s_reset')],
      });
      await expect.poll(() => stubs.count('ticketRcaFollowRun')).toBe(1);
      await handle.cancel();
      await expect.poll(async () => (await eventKinds(handle)).includes('activityTaskCancelRequested')).toBe(true);
      release();
      return { handle, result: await handle.result() };
    });
    expect(result).toBe('cancelled');
    // WAIT_CANCELLATION_COMPLETED: the workflow closed only after the poll it had asked to cancel ended.
    const kinds = await eventKinds(handle);
    const pollEnded = kinds.lastIndexOf('activityTaskCompleted');
    expect(kinds.indexOf('activityTaskCancelRequested')).toBeGreaterThan(0);
    expect(kinds.indexOf('activityTaskCancelRequested')).toBeLessThan(pollEnded);
    expect(pollEnded).toBeLessThan(kinds.indexOf('workflowExecutionCompleted'));
    expect(stubs.count('ticketRcaFollowRun')).toBe(1);
    expect(stubs.count('ticketRcaFinish')).toBe(0);
  });
});
